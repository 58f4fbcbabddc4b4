package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// queued is a message waiting for a step boundary.
type queued struct {
	parts  []llm.Part
	source string
}

// control is what other goroutines may do to a run in flight: steer it,
// queue follow-ups and context, cancel it or one of its calls. It is
// guarded by the agent's mu; the loop takes what is queued at its step
// boundaries.
type control struct {
	cancel      context.CancelCauseFunc
	cause       string
	cancelled   bool
	ending      bool // the turn is ending: steers and follow-ups are refused
	steers      []queued
	followUps   []queued
	injects     []queued
	lateInjects []queued // sent while the turn ended: recorded after it
	running     map[llm.CallID]*callState
	settled     map[llm.CallID]bool        // calls of this batch and the last with their result final
	finished    func(llm.CallID) bool      // whether the run wrote a result for a call (earlier batches)
	parked      map[llm.CallID]string      // cancels of calls not started yet
	kick        chan struct{}              // wakes a batch waiting for its calls
	watch       chan struct{}              // wakes Run's caller watching a call on the loop's driver
	mu          *sync.Mutex                // the agent's
	suspend     atomic.Pointer[suspension] // set by Suspend
	charged     charges                    // completions made on the run's behalf (Charge, Decide)
}

func newControl(cancel context.CancelCauseFunc, mu *sync.Mutex) *control {
	return &control{mu: mu, cancel: cancel, running: map[llm.CallID]*callState{}, settled: map[llm.CallID]bool{},
		parked: map[llm.CallID]string{}, kick: make(chan struct{}, 1), watch: make(chan struct{}, 1)}
}

func (c *control) accepting() bool { return !c.cancelled && !c.ending }

func (c *control) cancelLocked(cause string) {
	if c.cancelled {
		return
	}
	c.cancelled, c.cause = true, cause
	c.cancel(&cancelError{cause})
	c.kickLocked()
}

func (c *control) kickLocked() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
	select {
	case c.watch <- struct{}{}:
	default:
	}
}

// cancelToolLocked cancels one call: now when it runs, when it starts
// when it has not.
func (c *control) cancelToolLocked(id llm.CallID, reason string) error {
	if c.settled[id] || (c.running[id] == nil && c.finished != nil && c.finished(id)) {
		return ErrCallFinished
	}
	s, ok := c.running[id]
	if !ok {
		c.parked[id] = reason
		return nil
	}
	if s.returned && s.cancelReason == "" {
		return ErrCallFinished
	}
	if s.cancelReason == "" {
		s.cancelReason = reason
		s.cancel(errToolCancelled)
		c.kickLocked()
	}
	return nil
}

// The tool pipeline tells turn control of its calls through takeParked,
// started, returned and settle, and asks for CancelTool's reason; each
// takes the agent's mu.

// takeParked takes the cancel CancelTool gave a call before it started.
func (c *control) takeParked(id llm.CallID) (reason string, parked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reason, parked = c.parked[id]
	delete(c.parked, id)
	return reason, parked
}

// started gives s its context, under ctx, and lists it as running.
func (c *control) started(ctx context.Context, s *callState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	c.running[s.call.ID] = s
}

// returned notes that the body of s returned.
func (c *control) returned(s *callState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.returned = true
}

// reason is the reason CancelTool gave for s, or "".
func (c *control) reason(s *callState) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.cancelReason
}

// nextBatch forgets the settled calls of the batch before the last: the
// step between wrote their results, so finished finds them. The set stays
// the size of a batch, not of the run.
func (c *control) nextBatch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.settled)
}

// settle notes that a call's result is final.
func (c *control) settle(id llm.CallID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled[id] = true
	delete(c.running, id)
}

type cancelError struct{ cause string }

func (e *cancelError) Error() string { return "agent: run cancelled (" + e.cause + ")" }

var errToolCancelled = errors.New("tool call cancelled")

// Inject gives the model context without starting a turn. During a run it
// is delivered at the next step boundary; while idle it is recorded at
// once (durably) and the next request sees it.
func (a *Agent) Inject(ctx context.Context, parts ...llm.Part) error {
	if len(parts) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	q := queued{parts, session.SourceUser}
	if c := a.ctl; c != nil {
		if c.ending {
			c.lateInjects = append(c.lateInjects, q)
		} else {
			c.injects = append(c.injects, q)
		}
		return nil
	}
	return a.w.record(context.WithoutCancel(ctx), session.TriggerInject, contextOf(q)...)
}

func contextOf(qs ...queued) []session.Payload {
	out := make([]session.Payload, len(qs))
	for i, q := range qs {
		out[i] = &session.ContextMessage{Parts: q.parts, Source: q.source}
	}
	return out
}

// Steer sends a message to the running turn: it is recorded after the
// current step's tool results and the next request sees it. It returns
// false, queuing nothing, when no run is in flight, or the run is
// cancelled or ending; start a run with the message instead.
func (a *Agent) Steer(parts ...llm.Part) bool {
	return a.enqueue(parts, func(c *control) *[]queued { return &c.steers }, session.SourceSteer)
}

// FollowUp queues a message for when the running turn would otherwise
// end; it then adds a step. It returns false, queuing nothing, when no run
// is in flight, or the run is cancelled or ending. A follow-up still
// queued when the turn ends another way (cancel, a limit, an error) is
// dropped.
func (a *Agent) FollowUp(parts ...llm.Part) bool {
	return a.enqueue(parts, func(c *control) *[]queued { return &c.followUps }, session.SourceFollowUp)
}

func (a *Agent) enqueue(parts []llm.Part, queue func(*control) *[]queued, source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.ctl
	if c == nil || !c.accepting() || len(parts) == 0 {
		return false
	}
	q := queue(c)
	*q = append(*q, queued{parts, source})
	return true
}

// Cancel cancels the run in flight with cause (user, parent, hook, …);
// the first cause wins. It reports whether a run was cancelled.
func (a *Agent) Cancel(cause string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctl == nil {
		return false
	}
	a.ctl.cancelLocked(cause)
	return true
}

// CancelTool ends one tool call of the run in flight with an error result,
// leaving the others running. A call that has not started yet is parked
// and cancelled when it would start. It returns ErrCallFinished for a call
// that already has its result and ErrIdle when no run is in flight.
func (a *Agent) CancelTool(id llm.CallID, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctl == nil {
		return ErrIdle
	}
	if reason == "" {
		reason = "cancelled"
	}
	return a.ctl.cancelToolLocked(id, reason)
}

// take returns, and forgets, what is queued at a step boundary.
func (r *runState) take() (injects, steers []queued) {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	injects, steers = r.ctl.injects, r.ctl.steers
	r.ctl.injects, r.ctl.steers = nil, nil
	return injects, steers
}

// deliver records the queued injects, the host's notices and records, and
// the queued steers at a step boundary.
func (r *runState) deliver() {
	a := r.a
	injects, steers := r.take()
	for _, p := range contextOf(injects...) {
		r.emit(p)
	}
	if a.opts.Notices != nil {
		for _, n := range a.opts.Notices() {
			r.emit(&session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: n}}, Source: session.SourceSystem})
		}
	}
	if a.opts.Records != nil {
		for _, p := range a.opts.Records() {
			if !hostRecord(p) {
				a.log.Warn("a host record that would change the turn was dropped", "session", r.sid, "type", p.EventType())
				continue
			}
			r.emit(p)
		}
	}
	r.steer(steers)
}

// steer records steers that pass the prompt-submit chain.
func (r *runState) steer(steers []queued) {
	for _, q := range steers {
		if parts, end := r.admit(q); end == nil {
			r.emit(&session.SteeringMessage{Parts: parts, Source: q.source})
		}
	}
}

// more reports whether the turn goes on after a final answer: steers or
// injects are waiting, or a follow-up was admitted. When it returns false
// the run is ending and refuses new steers and follow-ups.
func (r *runState) more() bool {
	a := r.a
	for {
		a.mu.Lock()
		c := r.ctl
		if len(c.steers) > 0 || len(c.injects) > 0 {
			a.mu.Unlock()
			return true
		}
		fus := c.followUps
		c.followUps = nil
		if len(fus) == 0 {
			c.ending = true
			a.mu.Unlock()
			return false
		}
		a.mu.Unlock()
		admitted := false
		for _, q := range fus {
			if parts, end := r.admit(q); end == nil {
				r.emit(&session.UserMessage{Parts: parts, Source: q.source})
				admitted = true
			}
		}
		if admitted {
			return true
		}
	}
}

// endQueues marks the run ending and returns the steers it accepted,
// which are kept on the record though no request of this turn sees them.
func (r *runState) endQueues() []queued {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	steers := r.ctl.steers
	r.ctl.steers, r.ctl.ending = nil, true
	return steers
}

// admit runs a message sent to the turn (its prompt, a steer, a
// follow-up) through the prompt-submit chain: edits apply; a deny or a
// failed handler keeps it from the model with a prompt.blocked record,
// and the end the turn would take when it is the prompt.
func (r *runState) admit(q queued) ([]llm.Part, *turnEnd) {
	if !r.chain.Has(hook.Prompt) {
		return q.parts, nil
	}
	out, err := hook.Prompt.Run(r.ctx, r.chain, &hook.PromptInput{Scope: r.scope(), Parts: q.parts, Source: q.source})
	if err != nil {
		var he *hook.Error
		name := ""
		if errors.As(err, &he) {
			name = he.Hook
		}
		r.emit(&session.PromptBlocked{Reason: err.Error(), Hook: name})
		return nil, &turnEnd{reason: session.EndError, msg: err.Error(), code: "hook", err: err}
	}
	if out.Denied != nil {
		reason := out.Denied.Reason
		if reason == "" {
			reason = "The message was blocked"
			if q.source == session.SourceUser {
				reason = "The prompt was blocked"
			}
		}
		r.emit(&session.PromptBlocked{Reason: reason, Hook: out.Hook})
		return nil, &turnEnd{reason: session.EndBlocked, msg: reason}
	}
	return out.Parts, nil
}
