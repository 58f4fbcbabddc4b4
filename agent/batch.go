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
	idx int
	res *tool.Result
	dur time.Duration
}

// pipeline is the memory the run's batches reuse step after step.
type pipeline struct {
	bat    batch
	states []callState
	leaked bool // a call was left behind: states and channels are not reused
}

// batch is one step's tool calls in flight.
type batch struct {
	r       *runState
	calls   []*callState
	done    chan completion
	running int
	next    int // the first call whose result is not committed
	graceC  <-chan time.Time
	suspC   <-chan time.Time // a suspend's grace
	abort   *turnEnd
}

// runTools runs one step's tool calls: the pipeline up to approval in the
// model's order on the loop goroutine, execution in parallel up to the
// cap, results committed in the model's order. On a resume, plan says
// what the calls' records already hold; after a Suspend no call starts.
func (r *runState) runTools(parts []llm.Part, plan *resumePlan) *turnEnd {
	b := r.pipe.newBatch(r, parts)
	for _, s := range b.calls {
		if b.abort != nil || r.isCancelled() {
			b.settle(s, &verdict{res: tool.Errorf(textAbortedBeforeDispatch), outcome: session.OutcomeCancelled, code: CodeAborted})
			continue
		}
		if plan != nil && b.restore(s, plan) {
			b.commit()
			continue
		}
		if r.suspending() {
			break
		}
		if v := b.admit(s); v != nil {
			b.settle(s, v)
			b.commit()
			continue
		}
		exclusive := s.entry.spec.Exclusive
		for b.running > 0 && (exclusive || b.running >= r.a.parallel) {
			b.wait()
		}
		if r.isCancelled() {
			b.settle(s, &verdict{res: tool.Errorf(textAbortedBeforeDispatch), outcome: session.OutcomeCancelled, code: CodeAborted})
			continue
		}
		if r.suspending() {
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
	if b.abort == nil && r.suspending() {
		return b.suspend()
	}
	return b.abort
}

// newBatch readies the step's batch, reusing the last step's memory
// unless a call was left running behind it.
func (p *pipeline) newBatch(r *runState, parts []llm.Part) *batch {
	n := 0
	for _, q := range parts {
		if _, ok := q.(*llm.ToolCall); ok {
			n++
		}
	}
	b := &p.bat
	if p.leaked {
		b = &batch{}
	}
	done, calls := b.done, b.calls[:0]
	*b = batch{r: r}
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
	r := b.r
	s.settled = true
	s.res, s.outcome, s.code = v.res, v.outcome, v.code
	if v.executed {
		b.transform(s)
	}
	if r.chain.Has(hook.Dispatched) {
		if _, err := hook.Dispatched.Run(r.ctx, r.chain, &hook.DispatchedInput{Scope: r.scope(), Call: s.call, Outcome: s.outcome}); err != nil {
			r.a.log.Warn("dispatched notification failed", "err", err)
		}
	}
	r.a.mu.Lock()
	r.ctl.settled[s.call.ID] = true
	delete(r.ctl.running, s.call.ID)
	r.a.mu.Unlock()
}

// transform runs the tool-result chain (the output budget is its last
// handler) and the post notification of an executed call.
func (b *batch) transform(s *callState) {
	r := b.r
	if r.chain.Has(hook.ToolResult) {
		tout, err := hook.ToolResult.Run(r.ctx, r.chain, &hook.ToolResultInput{Scope: r.scope(), Call: s.call, Result: s.res, Outcome: s.outcome, Duration: s.dur})
		if err != nil {
			s.res, s.code = tool.Errorf("Tool error: result hook failed: %v", err), CodeHookError
		} else {
			s.res = tout.Result
		}
	}
	if !r.chain.Has(hook.PostTool) {
		return
	}
	post := &hook.PostToolInput{Scope: r.scope(), Call: s.call, Result: s.res, Duration: s.dur, Interrupted: s.interrupted}
	if s.res.IsError || s.code != "" {
		post.Failed, post.ErrorType, post.Message = true, errorType(s.code), textOf(s.res)
	}
	if _, err := hook.PostTool.Run(r.ctx, r.chain, post); err != nil {
		r.a.log.Warn("post-tool notification failed", "err", err)
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
	r := b.r
	n := 0
	for b.next < len(b.calls) && b.calls[b.next].settled {
		b.log(b.calls[b.next])
		b.next++
		n++
	}
	// The last results are written with the step's end.
	if n > 0 && b.next < len(b.calls) {
		r.flush()
	}
}

// dispatch records the call and starts it.
func (b *batch) dispatch(s *callState) {
	r := b.r
	a := r.a
	a.mu.Lock()
	reason, parked := r.ctl.parked[s.call.ID]
	delete(r.ctl.parked, s.call.ID)
	a.mu.Unlock()
	if parked {
		b.settle(s, &verdict{res: tool.Errorf("tool call cancelled before it started: %s", reason), outcome: session.OutcomeCancelled, code: CodeCancelled})
		return
	}
	r.emit(&session.ToolCall{CallID: s.call.ID, Name: s.call.Name, Args: s.args, Origin: s.entry.origin, Coerced: s.coerced})
	if !r.flush() || !r.durableStart(s) {
		// A call whose start is not on the record does not run.
		b.settle(s, &verdict{res: tool.Errorf(textAbortedBeforeDispatch), outcome: session.OutcomeCancelled, code: CodeAborted})
		return
	}
	a.mu.Lock()
	s.ctx, s.cancel = context.WithCancelCause(r.ctx)
	r.ctl.running[s.call.ID] = s
	a.mu.Unlock()
	s.start = a.opts.Now()
	b.running++
	s.tc = tool.Call{ID: s.call.ID, Name: s.call.Name, Args: s.args, Session: string(r.sid), Validated: true, Progress: r.progress(s.call.ID)}
	a.workers.run(job{a: a, s: s, done: b.done, start: time.Now()})
}

// progress is the report function of one call: each report is a
// transient tool.progress event for observers.
func (r *runState) progress(id llm.CallID) func(tool.Progress) {
	if !r.a.observed() {
		return noProgress
	}
	return func(p tool.Progress) {
		r.w.publish(r.turn, r.id, &session.ToolProgress{CallID: id, Message: p.Message, Done: p.Done})
	}
}

var noProgress = func(tool.Progress) {}

// exec runs one call's body on a worker, through tool.Run.
func exec(a *Agent, s *callState, done chan<- completion, start time.Time) {
	if a.opts.State != nil {
		st, err := tool.LoadState(s.ctx, a.opts.State, s.tc.Session, s.entry.spec.Name)
		if err != nil {
			res := tool.Errorf("Tool error: load the tool's state: %v", err).WithMeta(tool.MetaError, err)
			a.finish(s, done, completion{idx: s.idx, res: res, dur: time.Since(start)})
			return
		}
		s.tc.State = st
	}
	res, err := tool.Run(s.ctx, s.entry.t, &s.tc)
	if err != nil {
		a.log.Error("a tool's state was not saved", "tool", s.entry.spec.Name, "call", s.call.ID, "err", err)
	}
	a.finish(s, done, completion{idx: s.idx, res: res, dur: time.Since(start)})
}

// finish hands a returned call back to the loop.
func (a *Agent) finish(s *callState, done chan<- completion, c completion) {
	a.mu.Lock()
	s.returned = true
	a.mu.Unlock()
	done <- c
}

// wait blocks until one running call completes, or a cancel's grace runs
// out; it then settles what it can.
func (b *batch) wait() {
	b.waitOne()
	b.commit()
}

func (b *batch) waitOne() {
	r := b.r
	if b.graceC == nil && r.isCancelled() {
		b.graceC = time.After(r.a.grace)
	}
	if b.suspC == nil {
		b.suspC = r.suspendGrace()
	}
	select {
	case c := <-b.done:
		b.complete(c)
	case <-r.ctl.kick:
		if b.graceC == nil {
			b.graceC = time.After(r.a.grace)
		}
	case <-r.ctx.Done():
		if b.graceC == nil {
			b.graceC = time.After(r.a.grace)
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
	r := b.r
	b.graceC = nil
	runCancelled := r.isCancelled()
	for _, s := range b.calls {
		if s.settled || s.ctx == nil {
			continue
		}
		r.a.mu.Lock()
		reason := s.cancelReason
		r.a.mu.Unlock()
		if reason == "" && !runCancelled {
			continue
		}
		s.abandoned, s.interrupted = true, true
		r.pipe.leaked = true
		s.dur = r.a.opts.Now().Sub(s.start)
		b.running--
		b.settle(s, cancelled(reason))
	}
	b.commit()
}

// cancelled is the verdict on a call cancelled while it ran: by
// CancelTool (reason set) or with the run.
func cancelled(reason string) *verdict {
	if reason != "" {
		return &verdict{res: tool.Errorf("tool call cancelled: %s", reason), outcome: session.OutcomeCancelled, code: CodeCancelled, executed: true}
	}
	return &verdict{res: tool.Errorf(textAborted), outcome: session.OutcomeInterrupted, code: CodeAborted, executed: true}
}

// complete settles a call whose body returned.
func (b *batch) complete(c completion) {
	r := b.r
	s := b.calls[c.idx]
	if s.abandoned || s.settled {
		return
	}
	b.running--
	s.dur = c.dur
	r.a.mu.Lock()
	reason := s.cancelReason
	r.a.mu.Unlock()
	s.cancel(nil)
	terr := tool.ErrorOf(c.res)
	switch {
	case reason != "":
		s.interrupted = true
		b.settle(s, cancelled(reason))
	case terr != nil && r.isCancelled() && (errors.Is(terr, context.Canceled) || errors.Is(terr, context.DeadlineExceeded) || context.Cause(s.ctx) != nil):
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
	r := b.r
	v := &verdict{res: res, outcome: session.OutcomeExecute, code: CodeToolError, executed: true}
	var pe *tool.PanicError
	if errors.As(terr, &pe) {
		v.code = CodeToolPanic
	}
	eout, herr := hook.ToolError.Run(r.ctx, r.chain, &hook.ToolErrorInput{Scope: r.scope(), Call: s.call, Err: terr})
	if herr == nil && eout.Substitute != nil {
		v.res = eout.Substitute.Result
	}
	return v
}

// entry is the tool the model named in this step, with the run's tool
// middleware around it.
func (r *runState) entry(name string) *toolEntry {
	e := r.tb.lookup(name)
	if e == nil || len(r.toolMWs) == 0 {
		return e
	}
	if w := r.wrapped[e.spec.Name]; w != nil {
		return w
	}
	w := *e
	w.t = tool.Wrap(e.t, r.toolMWs...)
	if r.wrapped == nil {
		r.wrapped = map[string]*toolEntry{}
	}
	r.wrapped[e.spec.Name] = &w
	return &w
}

// useTools makes b the tools of the step.
func (r *runState) useTools(b *toolbox) {
	if r.tb != b {
		r.tb, r.wrapped = b, nil
	}
}
