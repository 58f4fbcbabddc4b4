package agent

// This file holds the loop's few touchpoints with the session and tool
// packages' helpers (history derivation, tail repair, validation, safe
// execution, the in-memory store), so each has one place to change.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// deriver folds events into the messages of a request, incrementally:
// each event costs O(its size), never O(history).
type deriver struct {
	msgs []llm.Message
	// resultsOpen: the last message is the user message collecting the
	// results of the last assistant message's calls.
	resultsOpen bool
	open        map[llm.CallID]struct{} // calls without a result yet
	seen        map[llm.CallID]struct{} // every call id so far
	dirty       bool                    // pairing needs a full repair pass
}

func newDeriver() *deriver {
	return &deriver{open: map[llm.CallID]struct{}{}, seen: map[llm.CallID]struct{}{}}
}

func (d *deriver) Add(evs ...session.Event) {
	for i := range evs {
		d.add(&evs[i])
	}
}

func (d *deriver) add(ev *session.Event) {
	switch p := ev.Data.(type) {
	case *session.UserMessage:
		d.user(p.Parts)
	case *session.SteeringMessage:
		d.user(p.Parts)
	case *session.ContextMessage:
		d.user(p.Parts)
	case *session.AssistantMessage:
		if len(p.Parts) == 0 {
			return
		}
		d.resultsOpen = false
		if len(d.open) > 0 {
			d.dirty = true // calls left without results
		}
		d.msgs = append(d.msgs, llm.Message{Role: llm.RoleAssistant, Parts: p.Parts, Provenance: p.Provenance})
		for _, part := range p.Parts {
			if c, ok := part.(*llm.ToolCall); ok {
				if _, dup := d.seen[c.ID]; dup {
					d.dirty = true
				}
				d.seen[c.ID] = struct{}{}
				d.open[c.ID] = struct{}{}
			}
		}
	case *session.ToolResult:
		if _, ok := d.open[p.CallID]; !ok {
			d.dirty = true // an orphan or a second result
		}
		delete(d.open, p.CallID)
		part := &llm.ToolResult{CallID: p.CallID, Parts: p.Parts, IsError: p.IsError}
		if d.resultsOpen {
			last := &d.msgs[len(d.msgs)-1]
			last.Parts = append(last.Parts, part)
			return
		}
		d.msgs = append(d.msgs, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{part}})
		d.resultsOpen = true
	case *session.Compaction:
		// The summary stands in for the history before it.
		d.msgs = append(d.msgs[:0:0], llm.UserText("Summary of the conversation so far:\n"+p.Summary))
		d.resultsOpen = false
		clear(d.open)
	}
}

func (d *deriver) user(parts []llm.Part) {
	if len(d.open) > 0 {
		d.dirty = true
	}
	d.resultsOpen = false
	d.msgs = append(d.msgs, llm.Message{Role: llm.RoleUser, Parts: parts})
}

// Messages returns the derived history. The slice is capped so that an
// append by the caller can never write into the deriver's array.
func (d *deriver) Messages() []llm.Message { return d.msgs[:len(d.msgs):len(d.msgs)] }

// needsRepair reports whether the history may have unpaired tool calls.
func (d *deriver) needsRepair() bool { return d.dirty || len(d.open) > 0 }

// repairPairing returns msgs with tool pairing made well formed: results
// with no call dropped, calls with no result answered by a synthetic error
// result, and a duplicate call id renamed (with its result). It reports
// each change.
func repairPairing(msgs []llm.Message) ([]llm.Message, []session.Repair) {
	var repairs []session.Repair
	out := make([]llm.Message, 0, len(msgs)+1)
	seen := map[llm.CallID]int{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != llm.RoleAssistant {
			// Results here belong to no call just before: orphans.
			m, repairs = dropResults(m, nil, repairs)
			if len(m.Parts) > 0 {
				out = append(out, m)
			}
			continue
		}
		// Collect this message's calls, renaming duplicates.
		var calls []llm.CallID
		rename := map[llm.CallID]llm.CallID{}
		parts := make([]llm.Part, len(m.Parts))
		copy(parts, m.Parts)
		for j, p := range parts {
			c, ok := p.(*llm.ToolCall)
			if !ok {
				continue
			}
			id := c.ID
			if n, dup := seen[id]; dup || id == "" {
				nid := llm.CallID(fmt.Sprintf("%s_dup%d", id, n+1))
				seen[id] = n + 1
				repairs = append(repairs, session.Repair{Kind: "duplicate-id", CallID: id, Detail: "renamed to " + string(nid)})
				rename[id] = nid
				cc := *c
				cc.ID = nid
				parts[j] = &cc
				id = nid
			}
			seen[id] = 0
			calls = append(calls, id)
		}
		m.Parts = parts
		out = append(out, m)
		if len(calls) == 0 {
			continue
		}
		// The next message should hold their results.
		want := map[llm.CallID]bool{}
		for _, id := range calls {
			want[id] = true
		}
		var res llm.Message
		if i+1 < len(msgs) && msgs[i+1].Role == llm.RoleUser && hasResults(msgs[i+1]) {
			i++
			res = msgs[i]
			// Apply renames to the first result of a renamed id.
			rp := make([]llm.Part, 0, len(res.Parts))
			for _, p := range res.Parts {
				if r, ok := p.(*llm.ToolResult); ok {
					if nid, ok := rename[r.CallID]; ok {
						rr := *r
						rr.CallID = nid
						delete(rename, r.CallID)
						p = &rr
					}
				}
				rp = append(rp, p)
			}
			res.Parts = rp
			res, repairs = dropResults(res, want, repairs)
		} else {
			res = llm.Message{Role: llm.RoleUser}
		}
		var missing []llm.Part
		for _, id := range calls {
			if want[id] {
				missing = append(missing, &llm.ToolResult{CallID: id, IsError: true, Parts: []llm.Part{&llm.Text{Text: "No result was recorded for this tool call; it may not have run. Check before retrying it."}}})
				repairs = append(repairs, session.Repair{Kind: "missing-result", CallID: id, Detail: "answered with a synthetic error result"})
			}
		}
		// Results first, then whatever else the message carried.
		var resParts, other []llm.Part
		for _, p := range res.Parts {
			if _, ok := p.(*llm.ToolResult); ok {
				resParts = append(resParts, p)
			} else {
				other = append(other, p)
			}
		}
		res.Parts = append(append(resParts, missing...), other...)
		out = append(out, res)
	}
	return out, repairs
}

func hasResults(m llm.Message) bool {
	for _, p := range m.Parts {
		if _, ok := p.(*llm.ToolResult); ok {
			return true
		}
	}
	return false
}

// dropResults removes results whose call is not in want (and marks each
// kept one as answered by deleting it from want).
func dropResults(m llm.Message, want map[llm.CallID]bool, repairs []session.Repair) (llm.Message, []session.Repair) {
	if !hasResults(m) {
		return m, repairs
	}
	keep := make([]llm.Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		if r, ok := p.(*llm.ToolResult); ok {
			if !want[r.CallID] {
				repairs = append(repairs, session.Repair{Kind: "orphan-result", CallID: r.CallID, Detail: "dropped a result with no matching call"})
				continue
			}
			want[r.CallID] = false
		}
		keep = append(keep, p)
	}
	m.Parts = keep
	return m, repairs
}

// repairTail returns the events that close a turn left open by a crash:
// results for unanswered calls, the open step's end, and the turn's end.
func repairTail(events []session.Event) []session.Payload {
	var (
		open     bool
		stepOpen int
		calls    []*llm.ToolCall
		started  = map[llm.CallID]bool{}
		answered = map[llm.CallID]bool{}
	)
	for _, ev := range events {
		switch p := ev.Data.(type) {
		case *session.TurnStart:
			open, stepOpen, calls = true, 0, nil
			clear(started)
			clear(answered)
		case *session.TurnEnd:
			open = false
		case *session.StepStart:
			stepOpen = p.Step
		case *session.StepEnd:
			stepOpen = 0
		case *session.AssistantMessage:
			for _, part := range p.Parts {
				if c, ok := part.(*llm.ToolCall); ok {
					calls = append(calls, c)
				}
			}
		case *session.ToolCall:
			started[p.CallID] = true
		case *session.ToolResult:
			answered[p.CallID] = true
		}
	}
	if !open {
		return nil
	}
	var out []session.Payload
	for _, c := range calls {
		if answered[c.ID] {
			continue
		}
		r := &session.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Outcome: session.OutcomeInterrupted}
		if started[c.ID] {
			r.Code = session.CodeOutcomeUnknown
			r.Parts = []llm.Part{&llm.Text{Text: "The process stopped while this tool call ran; its outcome is unknown; check before retrying."}}
		} else {
			r.Code = session.CodeNotStarted
			r.Parts = []llm.Part{&llm.Text{Text: "The process stopped before this tool call started; retry it if it is still needed."}}
		}
		out = append(out, r)
	}
	if stepOpen > 0 {
		out = append(out, &session.StepEnd{Step: stepOpen, Finish: llm.FinishAborted})
	}
	out = append(out, &session.Repair{Kind: "interrupted-turn", Detail: "closed a turn left open by a crash"},
		&session.TurnEnd{Reason: session.EndInterrupted, Message: "the previous process stopped mid-turn"})
	return out
}

// validator checks a call's arguments against a tool's schema, with the
// tool package's coercions.
type validator struct {
	v *tool.Validator
}

func newValidator(schema json.RawMessage) (*validator, error) {
	v, err := tool.NewValidator(schema)
	if err != nil {
		return nil, err
	}
	return &validator{v}, nil
}

// validate returns the arguments to run with, the paths of coerced
// fields, and a "Validation error: …" error for arguments that cannot be
// used.
func (v *validator) validate(args json.RawMessage) (json.RawMessage, []string, error) {
	fixed, coerced, err := v.v.Validate(args)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "Validation error") {
			err = fmt.Errorf("Validation error: %w", err)
		}
		return nil, nil, err
	}
	return fixed, coerced, nil
}

// errPanic marks a tool's panic.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.v) }

// runTool calls t, turning a panic into an error.
func runTool(ctx context.Context, t tool.Tool, call *tool.Call) (res *tool.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			_ = debug.Stack
			res, err = nil, &panicError{r}
		}
	}()
	res, err = t.Call(ctx, call)
	if err == nil && res == nil {
		res = &tool.Result{}
	}
	return res, err
}

// memStore is the in-memory store used when Options.Store is nil.
type memStore struct {
	mu       sync.Mutex
	sessions map[session.ID]*memSession
	n        int
}

type memSession struct {
	info   session.Info
	events []session.Event
}

func newMemStore() session.Store { return &memStore{sessions: map[session.ID]*memSession{}} }

func (s *memStore) Create(_ context.Context, req *session.CreateRequest) (session.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.ID
	if id == "" {
		s.n++
		id = session.ID(fmt.Sprintf("mem-%d", s.n))
	}
	if _, ok := s.sessions[id]; ok {
		return "", session.ErrExists
	}
	now := time.Now()
	s.sessions[id] = &memSession{info: session.Info{ID: id, Created: now, Updated: now, WorkDir: req.WorkDir, Parent: req.Parent, Meta: map[string]string{}}}
	return id, nil
}

func (s *memStore) get(id session.ID) (*memSession, error) {
	x, ok := s.sessions[id]
	if !ok {
		return nil, fmt.Errorf("session %s: %w", id, session.ErrNotFound)
	}
	return x, nil
}

func (s *memStore) Append(_ context.Context, id session.ID, events ...session.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.get(id)
	if err != nil {
		return err
	}
	for i, ev := range events {
		if ev.Seq != x.info.LastSeq+int64(i)+1 {
			return session.ErrSeqConflict
		}
	}
	x.events = append(x.events, events...)
	if n := len(events); n > 0 {
		x.info.LastSeq = events[n-1].Seq
		x.info.Updated = events[n-1].Time
	}
	return nil
}

func (s *memStore) Events(_ context.Context, id session.ID, after int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		s.mu.Lock()
		x, err := s.get(id)
		var evs []session.Event
		if err == nil {
			evs = x.events[:len(x.events):len(x.events)]
		}
		s.mu.Unlock()
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		for _, ev := range evs {
			if ev.Seq > after && !yield(ev, nil) {
				return
			}
		}
	}
}

func (s *memStore) Info(_ context.Context, id session.ID) (*session.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.get(id)
	if err != nil {
		return nil, err
	}
	info := x.info
	return &info, nil
}

func (s *memStore) List(context.Context) ([]session.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []session.Info
	for _, x := range s.sessions {
		out = append(out, x.info)
	}
	return out, nil
}

func (s *memStore) SetMeta(_ context.Context, id session.ID, k, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.get(id)
	if err != nil {
		return err
	}
	x.info.Meta[k] = v
	return nil
}

func (s *memStore) Delete(_ context.Context, id session.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return err
	}
	delete(s.sessions, id)
	return nil
}

func (s *memStore) Close() error { return nil }

var _ = errors.New
