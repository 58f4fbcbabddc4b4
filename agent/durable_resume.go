package agent

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// resumePlan is what the records of an open turn say about where it
// stopped.
type resumePlan struct {
	turn      session.TurnID
	after     int64 // the seq of its last record
	suspended bool
	pin       *session.TurnPin
	header    *session.RequestHeader // the turn's first, for a turn not pinned
	step      int
	stepOpen  bool
	msg       *session.AssistantMessage // the open step's answer; nil when its model call did not finish
	last      *session.AssistantMessage // the turn's last answer
	input     bool                      // a message came after the last answer: the next request is due

	results     map[llm.CallID]*session.ToolResult
	started     map[llm.CallID]*session.ToolCall
	interrupted map[llm.CallID]*session.ToolResult // the repair's results of started calls
}

// planResume reads the events of an open turn, its turn.start first.
func planResume(events []session.Event, now time.Time) *resumePlan {
	first := &events[0]
	p := &resumePlan{turn: first.Turn, after: events[len(events)-1].Seq,
		results: map[llm.CallID]*session.ToolResult{}, started: map[llm.CallID]*session.ToolCall{}, interrupted: map[llm.CallID]*session.ToolResult{}}
	for i := range events {
		ev := &events[i]
		if ev.ParentRun != first.ParentRun {
			continue // a child's lane
		}
		switch d := ev.Data.(type) {
		case *session.TurnPin:
			p.pin = firstOf(p.pin, d)
		case *session.RequestHeader:
			p.header = firstOf(p.header, d)
		case *session.StepStart:
			p.step, p.stepOpen, p.msg = d.Step, true, nil
		case *session.StepEnd:
			p.stepOpen = false
		case *session.AssistantMessage:
			if p.stepOpen {
				p.msg = d
			}
			p.last, p.input = d, false
		case *session.UserMessage, *session.SteeringMessage, *session.ContextMessage:
			p.input = true
		case *session.ToolCall:
			p.started[d.CallID] = d
		case *session.ToolResult:
			p.results[d.CallID] = d
		case *session.TurnSuspend:
			p.suspended = true
		case *session.TurnResume:
			p.suspended = false
		}
	}
	// The one rule for a call cut short after it started: the repair's
	// result, outcome unknown.
	for _, ev := range session.RepairEvents(events, now) {
		if res, ok := ev.Data.(*session.ToolResult); ok && res.Code == session.CodeOutcomeUnknown {
			p.interrupted[res.CallID] = res
		}
	}
	return p
}

func firstOf[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// resumeTurn is the body of a Resume: it checks the turn may be continued
// by this agent, records what it does with the calls in flight, and goes
// on with the loop: in the turn itself when it is open, in a new one when
// a crash's repair closed it.
func (r *runState) resumeTurn() (res *Result, err error) {
	defer r.recovered(&res, &err)
	events, open, err := r.w.resumable(r.wctx)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%w (session %s)", ErrNothingToResume, r.sid)
	}
	a := r.a
	p := planResume(events, a.opts.Now())
	a.refreshTools()
	r.useTools(a.tb.Load())
	if err := a.checkPin(p, r.sid); err != nil {
		return nil, err
	}
	if p.last != nil {
		r.final, r.hasFinal = llm.Message{Role: llm.RoleAssistant, Parts: p.last.Parts, Provenance: p.last.Provenance}, true
	}
	if !open {
		return r.finish(*r.continueClosed(p))
	}
	r.resumed = true
	r.turn, r.step, r.meter.steps = p.turn, p.step, p.step
	r.emit(r.resumeRecord(p))
	r.header(true, "resume")
	if !r.flush() {
		return r.finish(*errorEnd("", nil))
	}
	a.log.Debug("resuming a turn", "session", r.sid, "turn", r.turn, "step", p.step, "after", p.after)
	return r.finish(*r.continueTurn(p))
}

// resumeRecord says what the resume does with the calls of the open step
// that have no result.
func (r *runState) resumeRecord(p *resumePlan) *session.TurnResume {
	rec := &session.TurnResume{Step: p.step, After: p.after, Suspended: p.suspended}
	if !p.stepOpen || p.msg == nil {
		return rec
	}
	for _, q := range p.msg.Parts {
		c, ok := q.(*llm.ToolCall)
		switch {
		case !ok || p.results[c.ID] != nil:
		case p.started[c.ID] == nil:
			rec.Started = append(rec.Started, c.ID)
		case r.entry(c.Name) != nil && r.entry(c.Name).rerun:
			rec.Rerun = append(rec.Rerun, c.ID)
		default:
			rec.Interrupted = append(rec.Interrupted, c.ID)
		}
	}
	return rec
}

// continueClosed continues, in a new turn, a turn a crash's repair
// closed: the calls of its last step that did not really finish and are
// to run (never started, or started with a tool that may be re-run) are
// called again in the new turn's first step, as the harness's own
// message; the calls whose tools may not be re-run keep the repair's
// interrupted result, which the model reads.
func (r *runState) continueClosed(p *resumePlan) *turnEnd {
	a := r.a
	r.turn = r.w.nextTurn()
	r.emit(&session.TurnStart{Trigger: session.TriggerResume})
	r.pin()
	rec := &session.TurnResume{Step: p.step, After: p.after, Suspended: p.suspended, Continues: p.turn}
	var calls []llm.Part
	if p.last != nil {
		for _, q := range p.last.Parts {
			c, ok := q.(*llm.ToolCall)
			if !ok {
				continue
			}
			res := p.results[c.ID]
			switch {
			case res == nil || res.Code == session.CodeNotStarted:
				rec.Started = append(rec.Started, c.ID)
			case res.Code != session.CodeOutcomeUnknown:
				continue // a real result
			case r.entry(c.Name) != nil && r.entry(c.Name).rerun:
				rec.Rerun = append(rec.Rerun, c.ID)
			default:
				rec.Interrupted = append(rec.Interrupted, c.ID)
				continue
			}
			cc := *c
			calls = append(calls, &cc)
		}
	}
	r.emit(rec)
	if len(calls) == 0 {
		if end := r.answerAgain(p); end != nil {
			return end
		}
		return r.loop()
	}
	r.step, r.meter.steps, r.meter.stepStart = 1, 1, a.opts.Now()
	r.emit(&session.StepStart{Step: 1})
	r.header(true, "resume")
	msg := llm.Message{Role: llm.RoleAssistant, Parts: calls, Provenance: &llm.Provenance{Provider: "rein", Model: "resume"}}
	r.dedupeCalls(&msg) // the calls get ids of their own
	r.emit(&session.AssistantMessage{Parts: msg.Parts, Provenance: msg.Provenance, Finish: llm.FinishToolCalls})
	if end := r.answer(&msg, llm.Usage{}, llm.FinishToolCalls, nil); end != nil {
		return end
	}
	return r.loop()
}

// answerAgain decides again what the loop makes of the turn's last
// answer, when the turn stopped after the answer's step and before the
// decision was recorded; nil when the turn goes on (or there is no such
// answer).
func (r *runState) answerAgain(p *resumePlan) *turnEnd {
	if p.last == nil || p.input || hasToolCall(p.last.Parts) {
		return nil
	}
	if p.last.Finish == llm.FinishMaxTokens {
		return &turnEnd{reason: session.EndMaxTokens, msg: "the model reached its output token limit"}
	}
	msg := r.final
	return r.answered(&msg)
}

// continueTurn goes on from where the records stop: the open step's
// calls, or its model call again when it did not finish, or an answer's
// checks, then the loop.
func (r *runState) continueTurn(p *resumePlan) *turnEnd {
	switch {
	case p.stepOpen && p.msg != nil:
		msg := llm.Message{Role: llm.RoleAssistant, Parts: p.msg.Parts, Provenance: p.msg.Provenance}
		if end := r.answer(&msg, p.msg.Usage, p.msg.Finish, p); end != nil {
			return end
		}
	case p.stepOpen:
		r.meter.stepStart = r.a.opts.Now()
		if end := r.runStep(); end != nil {
			return end
		}
	default:
		if end := r.answerAgain(p); end != nil {
			return end
		}
	}
	return r.loop()
}

// checkPin refuses a resume by an agent whose tools, primary model or
// version differ from what the turn was started with: its turn.pin, or,
// for a turn that is not pinned, its first request header (no version).
func (a *Agent) checkPin(p *resumePlan, sid session.ID) error {
	pin := p.pin
	if pin == nil && p.header != nil {
		h := p.header
		pin = &session.TurnPin{Provider: h.Provider, Model: h.Model, Tools: h.Tools, ToolsHash: h.ToolsHash}
	}
	if pin == nil {
		return nil // no step began: nothing the turn relied on yet
	}
	mismatch := func(what, recorded, current string) error {
		return &ResumeMismatchError{Session: sid, Turn: p.turn, What: what, Recorded: recorded, Current: current}
	}
	tb, t := a.tb.Load(), a.targets[0]
	if pin.ToolsHash != tb.hash {
		rec, cur := strings.Join(pin.Tools, ", "), strings.Join(tb.names, ", ")
		if slices.Equal(pin.Tools, tb.names) {
			rec, cur = rec+" (other definitions)", cur+" (other definitions)"
		}
		return mismatch("tools", rec, cur)
	}
	if pin.Provider != t.Provider || pin.Model != t.Model {
		return mismatch("model", pin.Provider+"/"+pin.Model, t.Provider+"/"+t.Model)
	}
	if v := a.version(); pin.Version != "" && pin.Version != v {
		return mismatch("version", pin.Version, v)
	}
	return nil
}

// pin records what a durable turn is started with.
func (r *runState) pin() {
	a := r.a
	if !a.opts.Durable {
		return
	}
	a.refreshTools()
	tb, t := a.tb.Load(), a.targets[0]
	r.emit(&session.TurnPin{Provider: t.Provider, Model: t.Model, Tools: tb.names, ToolsHash: tb.hash, Version: a.version()})
}

// suspended ends a run that a Suspend stopped: what was accepted is
// recorded, then the turn.suspend, durably; the turn stays open.
func (r *runState) suspended(e turnEnd) (*Result, error) {
	if r.fatal == nil {
		if steers := r.endQueues(); len(e.open) == 0 {
			r.steer(steers)
		} else if len(steers) > 0 {
			r.a.mu.Lock()
			r.a.carry(r, nil, steers) // they belong after the open calls' results
			r.a.mu.Unlock()
		}
		r.emit(&session.TurnSuspend{Step: r.step, Pending: e.open, Reason: "suspended by the host"})
		if r.flush() {
			if err := r.w.sync(r.wctx); err != nil {
				r.fatal = err
			}
		}
	}
	res := r.result(session.EndSuspended, "")
	return res, r.fatal
}

// version is the program's version pinned on durable turns.
func (a *Agent) version() string {
	if a.opts.Version != "" {
		return a.opts.Version
	}
	return buildVersion()
}

var buildVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return bi.Main.Path + "@" + bi.Main.Version
})
