package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reinhq/rein/llm"
)

// laneOf says which nested turn structure an event belongs to: the main
// agent's events ("") or one subagent run. Turns of different lanes may
// interleave in one log; within a lane they never nest.
func laneOf(e *Event) RunID {
	if e.ParentRun == "" {
		return ""
	}
	return e.Run
}

// turnState follows one lane's open turn.
type turnState struct {
	start    Event // the turn.start event
	open     bool
	stepOpen bool
	step     int
	stepSeq  int64
	calls    []callRef
	called   map[llm.CallID]bool
	started  map[llm.CallID]bool
	answered map[llm.CallID]bool
}

type callRef struct {
	id   llm.CallID
	name string
	seq  int64
}

func (t *turnState) reset(start Event) {
	t.start = start
	t.open = true
	t.stepOpen = false
	t.step = 0
	t.calls = t.calls[:0]
	if t.called == nil {
		t.called = map[llm.CallID]bool{}
		t.started = map[llm.CallID]bool{}
		t.answered = map[llm.CallID]bool{}
	}
	clear(t.called)
	clear(t.started)
	clear(t.answered)
}

// RepairEvents returns the events to append to events, a session log, so
// that no turn is left open: for every tool call of an open turn without
// a result, a synthetic error ToolResult (code CodeOutcomeUnknown if a
// tool.call event shows it started, else CodeNotStarted), then a step.end
// if a step is open, then turn.end{interrupted}. The new events carry
// consecutive seqs after the last one, time now, and the header of the
// turn they close. A balanced log gets nil.
func RepairEvents(events []Event, now time.Time) []Event {
	if len(events) == 0 {
		return nil
	}
	lanes := map[RunID]*turnState{}
	var order []RunID // lanes by the seq of their open turn.start
	for i := range events {
		e := &events[i]
		lane := laneOf(e)
		t := lanes[lane]
		if t == nil {
			t = &turnState{}
			lanes[lane] = t
		}
		switch d := e.Data.(type) {
		case *TurnStart:
			t.reset(*e)
			order = append(slices.DeleteFunc(order, func(r RunID) bool { return r == lane }), lane)
		case *TurnEnd:
			t.open = false
		case *StepStart:
			if t.open {
				t.stepOpen, t.step, t.stepSeq = true, d.Step, e.Seq
			}
		case *StepEnd:
			t.stepOpen = false
		case *AssistantMessage:
			if !t.open {
				continue
			}
			for _, p := range d.Parts {
				if c, ok := p.(*llm.ToolCall); ok && !t.called[c.ID] {
					t.called[c.ID] = true
					t.calls = append(t.calls, callRef{c.ID, c.Name, e.Seq})
				}
			}
		case *ToolCall:
			if t.open {
				t.started[d.CallID] = true
			}
		case *ToolResult:
			if t.open {
				t.answered[d.CallID] = true
			}
		}
	}
	var out []Event
	seq := events[len(events)-1].Seq
	// Close the most recently opened turn first: a subagent's turn sits
	// inside its parent's.
	for _, lane := range slices.Backward(order) {
		t := lanes[lane]
		if !t.open {
			continue
		}
		next := func(p Payload) {
			seq++
			e := t.start
			e.Seq, e.Time, e.Data = seq, now, p
			out = append(out, e)
		}
		for _, c := range t.calls {
			if t.answered[c.id] {
				continue
			}
			r := &ToolResult{
				CallID:      c.id,
				Name:        c.name,
				IsError:     true,
				Outcome:     OutcomeInterrupted,
				Interrupted: true,
			}
			if t.started[c.id] {
				r.Code = CodeOutcomeUnknown
				r.Parts = []llm.Part{&llm.Text{Text: TextOutcomeUnknown}}
			} else {
				r.Code = CodeNotStarted
				r.Parts = []llm.Part{&llm.Text{Text: TextNotStarted}}
			}
			next(r)
		}
		if t.stepOpen {
			next(&StepEnd{Step: t.step, Finish: llm.FinishAborted})
		}
		next(&TurnEnd{
			Reason:  EndInterrupted,
			Message: "the turn was cut short before it ended (the process stopped); it was closed on reopening",
		})
	}
	return out
}

// RepairLog reads session id from st and appends the events RepairEvents
// returns for it, closing an open tail turn. It returns the appended
// events; nil when the log was already balanced.
func RepairLog(ctx context.Context, st Store, id ID) ([]Event, error) {
	events, err := collect(ctx, st, id, 0)
	if err != nil {
		return nil, fmt.Errorf("session: repair %s: %w", id, err)
	}
	fix := RepairEvents(events, time.Now())
	if len(fix) == 0 {
		return nil, nil
	}
	if err := st.Append(ctx, id, fix...); err != nil {
		return nil, fmt.Errorf("session: repair %s: %w", id, err)
	}
	return fix, nil
}

// collect reads the events of id after afterSeq into a slice.
func collect(ctx context.Context, st Store, id ID, afterSeq int64) ([]Event, error) {
	var events []Event
	for e, err := range st.Events(ctx, id, afterSeq) {
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	if events == nil {
		// Events yields nothing for an empty session; make sure it exists.
		if _, err := st.Info(ctx, id); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// Balanced checks the invariants of a whole session log and returns an
// error naming the first seq that breaks one, or nil:
//
//   - seqs run 1, 2, 3, … with no gap;
//   - every event has a payload, and every event but session.meta and
//     unknown types sits inside a turn;
//   - turns and steps open and close in order, and none is left open;
//   - every tool call of an assistant message gets exactly one tool.result
//     in the same turn, and every tool.call and tool.result names a call
//     made earlier in that turn.
//
// Turns of the main agent and of each subagent run (events with ParentRun
// set) are checked separately.
func Balanced(events []Event) error {
	lanes := map[RunID]*turnState{}
	for i := range events {
		e := &events[i]
		if e.Seq != int64(i+1) {
			return fmt.Errorf("session: unbalanced log: event %d has seq %d, want %d", i, e.Seq, i+1)
		}
		if e.Data == nil {
			return fmt.Errorf("session: unbalanced log: seq %d has no payload", e.Seq)
		}
		lane := laneOf(e)
		t := lanes[lane]
		if t == nil {
			t = &turnState{}
			lanes[lane] = t
		}
		if _, ok := e.Data.(*TurnStart); ok {
			if t.open {
				return fmt.Errorf("session: unbalanced log: turn.start at seq %d while the turn opened at seq %d is open", e.Seq, t.start.Seq)
			}
			t.reset(*e)
			continue
		}
		if !t.open {
			switch e.Data.(type) {
			case *SessionMeta, *Unknown:
				continue
			}
			return fmt.Errorf("session: unbalanced log: %s at seq %d is outside any turn", e.Data.EventType(), e.Seq)
		}
		switch d := e.Data.(type) {
		case *TurnEnd:
			if t.stepOpen {
				return fmt.Errorf("session: unbalanced log: turn.end at seq %d while the step opened at seq %d is open", e.Seq, t.stepSeq)
			}
			for _, c := range t.calls {
				if !t.answered[c.id] {
					return fmt.Errorf("session: unbalanced log: tool call %q (seq %d) has no result when its turn ends at seq %d", c.id, c.seq, e.Seq)
				}
			}
			t.open = false
		case *StepStart:
			if t.stepOpen {
				return fmt.Errorf("session: unbalanced log: step.start at seq %d while the step opened at seq %d is open", e.Seq, t.stepSeq)
			}
			t.stepOpen, t.step, t.stepSeq = true, d.Step, e.Seq
		case *StepEnd:
			if !t.stepOpen {
				return fmt.Errorf("session: unbalanced log: step.end at seq %d with no open step", e.Seq)
			}
			t.stepOpen = false
		case *AssistantMessage:
			for _, p := range d.Parts {
				c, ok := p.(*llm.ToolCall)
				if !ok {
					continue
				}
				if t.called[c.ID] {
					return fmt.Errorf("session: unbalanced log: tool call id %q repeated at seq %d", c.ID, e.Seq)
				}
				t.called[c.ID] = true
				t.calls = append(t.calls, callRef{c.ID, c.Name, e.Seq})
			}
		case *ToolCall:
			if !t.called[d.CallID] {
				return fmt.Errorf("session: unbalanced log: tool.call at seq %d names unknown call %q", e.Seq, d.CallID)
			}
			t.started[d.CallID] = true
		case *ToolResult:
			if !t.called[d.CallID] {
				return fmt.Errorf("session: unbalanced log: tool.result at seq %d answers unknown call %q", e.Seq, d.CallID)
			}
			if t.answered[d.CallID] {
				return fmt.Errorf("session: unbalanced log: tool.result at seq %d answers call %q a second time", e.Seq, d.CallID)
			}
			t.answered[d.CallID] = true
		}
	}
	for lane, t := range lanes {
		if t.open {
			where := "the main agent"
			if lane != "" {
				where = "subagent run " + string(lane)
			}
			return fmt.Errorf("session: unbalanced log: the turn of %s opened at seq %d is not closed", where, t.start.Seq)
		}
	}
	return nil
}
