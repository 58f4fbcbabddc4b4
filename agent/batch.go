package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// callState follows one tool call of a step through the pipeline.
type callState struct {
	idx   int
	call  llm.ToolCall
	entry *toolEntry

	args    json.RawMessage
	coerced []string
	tc      tool.Call

	ctx          context.Context
	cancel       context.CancelCauseFunc
	cancelReason string // set by CancelTool, under a.mu
	returned     bool   // the body returned, under a.mu
	start        time.Time

	settled     bool
	logged      bool // its result is on the log
	rerun       bool // a resume runs it again with its recorded arguments
	abandoned   bool
	res         *tool.Result
	outcome     string
	code        string
	dur         time.Duration
	interrupted bool
}

type completion struct {
	idx      int
	res      *tool.Result
	dur      time.Duration
	panicked any // a panic outside the tool's body, which the loop raises
}

// pipeline is the run's tool pipeline: what it sees of the run, and the
// memory its batches reuse step after step.
type pipeline struct {
	run   toolRun
	ctx   context.Context // the run's
	chain hook.Chain      // the run's hooks
	ctl   *control
	x     *callRunner
	co    *coLoop // runs a batch's lone call on the loop's driver; nil runs every call on a worker

	bat    batch
	states []callState
	leaked bool // a call was left behind: states and channels are not reused
}

// batch is one step's tool calls in flight.
type batch struct {
	*pipeline
	calls   []*callState
	done    chan completion
	running int
	next    int // the first call whose result is not committed
	graceC  <-chan time.Time
	suspC   <-chan time.Time // a suspend's grace
	abort   *turnEnd
}

// runStep runs one step's tool calls: the pipeline up to approval in the
// model's order on the loop goroutine, execution in parallel up to the
// cap, results committed in the model's order. On a resume, plan says
// what the calls' records already hold; after a Suspend no call starts.
func (p *pipeline) runStep(parts []llm.Part, plan *resumePlan) *turnEnd {
	b := p.newBatch(parts)
	for _, s := range b.calls {
		if b.abort != nil || b.cancelled() {
			b.settle(s, &verdict{res: tool.Errorf(textAbortedBeforeDispatch), outcome: session.OutcomeCancelled, code: CodeAborted})
			continue
		}
		if plan != nil && b.restore(s, plan) {
			b.commit()
			continue
		}
		if b.ctl.suspended(b.ctx) != nil {
			break
		}
		if v := b.admit(s); v != nil {
			b.settle(s, v)
			b.commit()
			continue
		}
		exclusive := s.entry.spec.Exclusive
		for b.running > 0 && (exclusive || b.running >= b.x.parallel) {
			b.wait()
		}
		if b.cancelled() {
			b.settle(s, &verdict{res: tool.Errorf(textAbortedBeforeDispatch), outcome: session.OutcomeCancelled, code: CodeAborted})
			continue
		}
		if b.ctl.suspended(b.ctx) != nil {
			break
		}
		b.dispatch(s)
		for exclusive && b.running > 0 {
			b.wait()
		}
		b.commit()
	}
	for b.running > 0 {
		b.wait()
	}
	b.commit()
	if b.abort == nil && b.ctl.suspended(b.ctx) != nil {
		return b.suspend()
	}
	return b.abort
}

// newBatch readies the step's batch, reusing the last step's memory
// unless a call was left running behind it.
func (p *pipeline) newBatch(parts []llm.Part) *batch {
	n := 0
	for _, q := range parts {
		if _, ok := q.(*llm.ToolCall); ok {
			n++
		}
	}
	p.ctl.nextBatch()
	b := &p.bat
	if p.leaked {
		b = &batch{}
	}
	done, calls := b.done, b.calls[:0]
	*b = batch{pipeline: p}
	if p.leaked || cap(done) < n {
		done = make(chan completion, max(n, 4))
	}
	states := p.states
	if p.leaked || cap(states) < n {
		states = make([]callState, max(n, 4))
		if !p.leaked {
			p.states = states
		}
	}
	for _, q := range parts {
		if c, ok := q.(*llm.ToolCall); ok {
			i := len(calls)
			states[i] = callState{idx: i, call: *c}
			calls = append(calls, &states[i])
		}
	}
	b.done, b.calls = done, calls
	return b
}

// settle gives a call its terminal result. When the body ran (or a
// substitute stood in for it) the result chain and the post notification
// run too.
func (b *batch) settle(s *callState, v *verdict) {
	if s.settled {
		return
	}
	s.settled = true
	s.res, s.outcome, s.code = v.res, v.outcome, v.code
	if v.executed {
		b.transform(s)
	}
	if b.chain.Has(hook.Dispatched) {
		if _, err := hook.Dispatched.Run(b.ctx, b.chain, &hook.DispatchedInput{Scope: b.run.scope(), Call: s.call, Outcome: s.outcome}); err != nil {
			b.x.log.Warn("dispatched notification failed", "err", err)
		}
	}
	b.ctl.settle(s.call.ID)
}

// transform runs the tool-result chain (the output budget is its last
// handler) and the post notification of an executed call.
func (b *batch) transform(s *callState) {
	if b.chain.Has(hook.ToolResult) {
		tout, err := hook.ToolResult.Run(b.ctx, b.chain, &hook.ToolResultInput{Scope: b.run.scope(), Call: s.call, Result: s.res, Outcome: s.outcome, Duration: s.dur})
		if err != nil {
			s.res, s.code = tool.Errorf("Tool error: result hook failed: %v", err), CodeHookError
		} else {
			s.res = tout.Result
		}
	}
	if !b.chain.Has(hook.PostTool) {
		return
	}
	post := &hook.PostToolInput{Scope: b.run.scope(), Call: s.call, Result: s.res, Duration: s.dur, Interrupted: s.interrupted}
	if s.res.IsError || s.code != "" {
		post.Failed, post.ErrorType, post.Message = true, errorType(s.code), textOf(s.res)
	}
	if _, err := hook.PostTool.Run(b.ctx, b.chain, post); err != nil {
		b.x.log.Warn("post-tool notification failed", "err", err)
	}
}

func errorType(code string) string {
	switch code {
	case CodeToolPanic:
		return "panic"
	case CodeToolError:
		return "error"
	case CodeCancelled:
		return "cancelled"
	case CodeAborted:
		return "aborted"
	case "":
		return "result-error"
	}
	return code
}

func textOf(res *tool.Result) string {
	var s string
	for _, p := range res.Parts {
		if t, ok := p.(*llm.Text); ok {
			s += t.Text
		}
	}
	return s
}

// commit writes the results of the settled prefix, in the model's order.
func (b *batch) commit() {
	n := 0
	for b.next < len(b.calls) && b.calls[b.next].settled {
		b.log(b.calls[b.next])
		b.next++
		n++
	}
	// The last results are written with the step's end.
	if n > 0 && b.next < len(b.calls) {
		b.run.flush()
	}
}

// dispatch records the call and starts it.
func (b *batch) dispatch(s *callState) {
	if reason, parked := b.ctl.takeParked(s.call.ID); parked {
		b.settle(s, &verdict{res: tool.Errorf("tool call cancelled before it started: %s", reason), outcome: session.OutcomeCancelled, code: CodeCancelled})
		return
	}
	b.run.emit(&session.ToolCall{CallID: s.call.ID, Name: s.call.Name, Args: s.args, Origin: s.entry.origin, Coerced: s.coerced})
	if !b.run.flush() || !b.durableStart(s) {
		// A call whose start is not on the record does not run.
		b.settle(s, &verdict{res: tool.Errorf(textAbortedBeforeDispatch), outcome: session.OutcomeCancelled, code: CodeAborted})
		return
	}
	b.ctl.started(b.ctx, s)
	s.start = b.x.now()
	b.running++
	s.tc = tool.Call{ID: s.call.ID, Name: s.call.Name, Args: s.args, Session: string(b.run.scope().Session), Validated: true, Progress: b.run.progress(s.call.ID)}
	j := job{x: b.x, ctl: b.ctl, s: s, done: b.done, start: time.Now()}
	if b.co == nil || !b.alone(s) {
		b.x.workers.run(j)
		return
	}
	c, given := b.co.call(j)
	switch given {
	case notGivenUp:
		b.complete(c)
	case givenUpCancelled:
		b.abandon()
	case givenUpSuspended:
		b.leave()
	}
}

// alone reports whether s, just dispatched, runs with no call beside it
// from start to end, so it may run on the loop's driver: none other runs,
// and none is to start before it ends, because it is the batch's last,
// calls run one at a time, or its tool runs alone.
func (b *batch) alone(s *callState) bool {
	return b.running == 1 && (s == b.calls[len(b.calls)-1] || b.x.parallel == 1 || s.entry.spec.Exclusive)
}

// wait blocks until one running call completes, or a cancel's grace runs
// out; it then settles what it can.
func (b *batch) wait() {
	b.waitOne()
	b.commit()
}

func (b *batch) waitOne() {
	if b.graceC == nil && b.cancelled() {
		b.graceC = time.After(b.x.grace)
	}
	if b.suspC == nil {
		b.suspC = b.suspendGrace()
	}
	select {
	case c := <-b.done:
		b.complete(c)
	case <-b.ctl.kick:
		if b.graceC == nil {
			b.graceC = time.After(b.x.grace)
		}
	case <-b.ctx.Done():
		if b.graceC == nil {
			b.graceC = time.After(b.x.grace)
		}
		// Wait for the first completion or the grace.
		select {
		case c := <-b.done:
			b.complete(c)
		case <-b.graceC:
			b.abandon()
		}
	case <-b.graceC:
		b.abandon()
	case <-b.suspC:
		b.leave()
	}
}

// abandon settles every cancelled call that has not returned in its grace;
// its goroutine finishes on its own and Close waits for it.
func (b *batch) abandon() {
	b.graceC = nil
	runCancelled := b.cancelled()
	for _, s := range b.calls {
		if s.settled || s.ctx == nil {
			continue
		}
		reason := b.ctl.reason(s)
		if reason == "" && !runCancelled {
			continue
		}
		s.abandoned, s.interrupted = true, true
		b.leaked = true
		s.dur = b.x.now().Sub(s.start)
		b.running--
		b.settle(s, cancelled(reason))
	}
	b.commit()
}

// cancelled reports whether the run is cancelled.
func (b *batch) cancelled() bool { return b.ctx.Err() != nil }

// cancelled is the verdict on a call cancelled while it ran: by
// CancelTool (reason set) or with the run.
func cancelled(reason string) *verdict {
	if reason != "" {
		return &verdict{res: tool.Errorf("tool call cancelled: %s", reason), outcome: session.OutcomeCancelled, code: CodeCancelled, executed: true}
	}
	return &verdict{res: tool.Errorf(textAborted), outcome: session.OutcomeInterrupted, code: CodeAborted, executed: true}
}

// complete settles a call whose body returned. A panic outside the
// body, such as a state store's, is raised on the loop, which closes the
// turn as it does for its own panics, unless the turn went on without
// the call.
func (b *batch) complete(c completion) {
	s := b.calls[c.idx]
	if s.abandoned || s.settled {
		return
	}
	if c.panicked != nil {
		panic(c.panicked)
	}
	b.running--
	s.dur = c.dur
	reason := b.ctl.reason(s)
	s.cancel(nil)
	terr := tool.ErrorOf(c.res)
	switch {
	case reason != "":
		s.interrupted = true
		b.settle(s, cancelled(reason))
	case terr != nil && b.cancelled() && (errors.Is(terr, context.Canceled) || errors.Is(terr, context.DeadlineExceeded) || context.Cause(s.ctx) != nil):
		s.interrupted = true
		b.settle(s, cancelled(""))
	case terr != nil:
		b.settle(s, b.failed(s, terr, c.res))
	default:
		b.settle(s, &verdict{res: c.res, outcome: session.OutcomeExecute, executed: true})
	}
}

// failed is the verdict on a call whose tool returned an error or
// panicked: tool.Run's "Tool error: …" result, unless a tool-error
// handler substitutes one.
func (b *batch) failed(s *callState, terr error, res *tool.Result) *verdict {
	v := &verdict{res: res, outcome: session.OutcomeExecute, code: CodeToolError, executed: true}
	var pe *tool.PanicError
	if errors.As(terr, &pe) {
		v.code = CodeToolPanic
	}
	eout, herr := hook.ToolError.Run(b.ctx, b.chain, &hook.ToolErrorInput{Scope: b.run.scope(), Call: s.call, Err: terr})
	if herr == nil && eout.Substitute != nil {
		v.res = eout.Substitute.Result
	}
	return v
}
