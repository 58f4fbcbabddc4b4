package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Result texts of calls that did not run normally.
const (
	textAbortedBeforeDispatch = "tool call aborted before dispatch"
	textAborted               = "tool call aborted"
	defaultBlockReason        = "Tool execution was blocked"
)

// Result codes on tool.result events.
const (
	CodeBlocked        = "BLOCKED"
	CodeApprovalDenied = "APPROVAL_DENIED"
	CodeHookError      = "HOOK_ERROR"
	CodeUnknownTool    = "UNKNOWN_TOOL"
	CodeInvalidInput   = "INVALID_INPUT"
	CodeToolError      = "TOOL_ERROR"
	CodeToolPanic      = "TOOL_PANIC"
	CodeCancelled      = "CANCELLED"
	CodeAborted        = "ABORTED"
	CodeGuard          = "GUARD"
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
	err error
	dur time.Duration
}

var noProgress = func(tool.Progress) {}

// batch is one step's tool calls in flight.
type batch struct {
	r       *runState
	calls   []*callState
	done    chan completion
	running int
	next    int // the first call whose result is not committed
	graceC  <-chan time.Time
	abort   *turnEnd
}

// runTools runs one step's tool calls: the pipeline up to approval in the
// model's order on the loop goroutine, execution in parallel up to the
// cap, results committed in the model's order.
func (r *runState) runTools(parts []llm.Part) *turnEnd {
	a := r.a
	b := r.newBatch(parts)
	for _, s := range b.calls {
		if b.abort != nil || r.isCancelled() {
			b.settle(s, tool.Errorf(textAbortedBeforeDispatch), session.OutcomeCancelled, CodeAborted, false)
			continue
		}
		if b.prepare(s) {
			b.commit()
			continue
		}
		exclusive := s.entry.spec.Exclusive
		for b.running > 0 && (exclusive || b.running >= a.parallel) {
			b.wait()
		}
		if r.isCancelled() {
			b.settle(s, tool.Errorf(textAbortedBeforeDispatch), session.OutcomeCancelled, CodeAborted, false)
			continue
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
	return b.abort
}

// newBatch readies the step's batch, reusing the last step's memory
// unless a call was left running behind it.
func (r *runState) newBatch(parts []llm.Part) *batch {
	n := 0
	for _, p := range parts {
		if _, ok := p.(*llm.ToolCall); ok {
			n++
		}
	}
	b := &r.bat
	if r.leaked {
		b = &batch{}
	}
	done, calls := b.done, b.calls[:0]
	*b = batch{r: r}
	if r.leaked || cap(done) < n {
		done = make(chan completion, max(n, 4))
	}
	states := r.states
	if r.leaked || cap(states) < n {
		states = make([]callState, max(n, 4))
		if !r.leaked {
			r.states = states
		}
	}
	for _, p := range parts {
		if c, ok := p.(*llm.ToolCall); ok {
			i := len(calls)
			states[i] = callState{idx: i, call: *c}
			calls = append(calls, &states[i])
		}
	}
	b.done, b.calls = done, calls
	return b
}

// settle gives a call its terminal result; executed says whether a post
// notification is due (the body ran or a substitute stood in for it).
func (b *batch) settle(s *callState, res *tool.Result, outcome, code string, executed bool) {
	if s.settled {
		return
	}
	r := b.r
	s.settled = true
	s.res, s.outcome, s.code = res, outcome, code
	if executed && r.chain.Has(hook.PointToolResult) {
		tout, err := r.chain.ToolResult(r.ctx, &hook.ToolResultInput{Scope: r.scope(), Call: s.call, Result: s.res, Outcome: outcome, Duration: s.dur})
		r.records(tout.Records, s.call.ID)
		if err != nil {
			s.res, s.code = tool.Errorf("Tool error: result hook failed: %v", err), CodeHookError
		} else if tout.Result != nil {
			s.res = tout.Result
		}
	}
	if executed {
		b.budget(s)
	}
	if executed && r.chain.Has(hook.PointPostTool) {
		post := &hook.PostToolInput{Scope: r.scope(), Call: s.call, Result: s.res, Duration: s.dur, Interrupted: s.interrupted}
		if s.res.IsError || s.code != "" {
			post.Failed = true
			post.ErrorType = errorType(s.code)
			post.Message = textOf(s.res)
		}
		if err := r.chain.PostTool(r.ctx, post); err != nil {
			r.a.log.Warn("post-tool notification failed", "err", err)
		}
	}
	if r.chain.Has(hook.PointDispatched) {
		if err := r.chain.Dispatched(r.ctx, &hook.DispatchedInput{Scope: r.scope(), Call: s.call, Outcome: outcome}); err != nil {
			r.a.log.Warn("dispatched notification failed", "err", err)
		}
	}
	r.a.mu.Lock()
	r.settled[s.call.ID] = true
	delete(r.running, s.call.ID)
	r.a.mu.Unlock()
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
		s := b.calls[b.next]
		r.emit(&session.ToolResult{CallID: s.call.ID, Name: s.call.Name, Parts: s.res.Parts, IsError: s.res.IsError, Code: s.code, Outcome: s.outcome, Duration: s.dur, Interrupted: s.interrupted})
		b.next++
		n++
	}
	// The last results are written with the step's end.
	if n > 0 && b.next < len(b.calls) {
		r.flush()
	}
}

// prepare runs the pipeline up to approval. It reports whether the call
// is settled (it will not execute).
func (b *batch) prepare(s *callState) bool {
	r := b.r
	a := r.a
	s.entry = a.tools[s.call.Name]
	if s.entry == nil && a.opts.ToolSet != nil {
		if name, ok := a.opts.ToolSet.Canonical(s.call.Name); ok {
			s.entry = a.tools[name]
		}
	}
	var spec *tool.Spec
	if s.entry != nil {
		spec = &s.entry.spec
	}
	// Gate.
	var gout hook.GateOutcome
	var err error
	if r.chain.Has(hook.PointToolGate) {
		gout, err = r.chain.Gate(r.ctx, &hook.ToolInput{Scope: r.scope(), Call: s.call, Spec: spec})
		r.records(gout.Records, s.call.ID)
	}
	switch {
	case err != nil:
		b.settle(s, tool.Errorf("Blocked: %v", err), session.OutcomeGateBlock, CodeHookError, false)
		return true
	case gout.Denied != nil:
		reason := gout.Denied.Reason
		if reason == "" {
			reason = defaultBlockReason
		}
		b.settle(s, tool.Errorf("Blocked: %s", reason), session.OutcomeGateBlock, CodeBlocked, false)
		return true
	case gout.Substitute != nil:
		b.settle(s, gout.Substitute.Result, session.OutcomeSubstitute, "", true)
		return true
	}
	if gout.Args != nil {
		s.call.Args = gout.Args
	}
	// Unknown tool.
	if s.entry == nil {
		uout, err := r.chain.UnknownTool(r.ctx, &hook.UnknownToolInput{Scope: r.scope(), Call: s.call})
		r.records(uout.Records, s.call.ID)
		switch {
		case err != nil:
			b.settle(s, tool.Errorf("Unknown tool: %s", s.call.Name), session.OutcomeUnknown, CodeHookError, false)
		case uout.Substitute != nil:
			b.settle(s, uout.Substitute.Result, session.OutcomeUnknown, "", false)
		default:
			b.settle(s, tool.Errorf("Unknown tool: %s", s.call.Name), session.OutcomeUnknown, CodeUnknownTool, false)
		}
		return true
	}
	// Validation with coercion; an edited argument set is validated too.
	args, coerced, err := s.entry.v.validate(s.call.Args)
	if err != nil {
		b.settle(s, &tool.Result{Parts: []llm.Part{&llm.Text{Text: err.Error()}}, IsError: true}, session.OutcomeInvalidInput, CodeInvalidInput, false)
		return true
	}
	s.args, s.coerced = args, coerced
	// Pre-tool-use: edits of validated arguments are validated again.
	var pout hook.GateOutcome
	if r.chain.Has(hook.PointPreToolUse) {
		pin := &hook.ToolInput{Scope: r.scope(), Call: s.call, Spec: spec, Validated: true}
		pin.Call.Args = s.args
		pout, err = r.chain.PreToolUse(r.ctx, pin)
		r.records(pout.Records, s.call.ID)
	}
	switch {
	case err != nil:
		b.settle(s, tool.Errorf("Blocked: %v", err), session.OutcomeGateBlock, CodeHookError, false)
		return true
	case pout.Denied != nil:
		reason := pout.Denied.Reason
		if reason == "" {
			reason = defaultBlockReason
		}
		b.settle(s, tool.Errorf("Blocked: %s", reason), session.OutcomeGateBlock, CodeBlocked, false)
		return true
	case pout.Substitute != nil:
		b.settle(s, pout.Substitute.Result, session.OutcomeSubstitute, "", true)
		return true
	case pout.Args != nil:
		args, coerced, err := s.entry.v.validate(pout.Args)
		if err != nil {
			b.settle(s, &tool.Result{Parts: []llm.Part{&llm.Text{Text: err.Error()}}, IsError: true}, session.OutcomeInvalidInput, CodeInvalidInput, false)
			return true
		}
		s.call.Args = pout.Args
		s.args, s.coerced = args, append(s.coerced, coerced...)
	}
	// Approval.
	if blocked, code := b.approve(s, spec); blocked != "" {
		b.settle(s, tool.Errorf("Blocked: %s", blocked), session.OutcomeGateBlock, code, false)
		return true
	}
	// Guards.
	return b.guard(s)
}

// approve returns a non-empty reason when the call may not run.
func (b *batch) approve(s *callState, spec *tool.Spec) (string, string) {
	r := b.r
	a := r.a
	if a.opts.Approver == nil && !r.chain.Has(hook.PointApproval) {
		return "", ""
	}
	in := &hook.ToolInput{Scope: r.scope(), Call: s.call, Spec: spec, Validated: true}
	in.Call.Args = s.args
	aout, err := r.chain.Approval(r.ctx, in)
	r.records(aout.Records, s.call.ID)
	if err != nil {
		return err.Error(), CodeHookError
	}
	d := aout.Decision
	readOnly := spec.Annotations != nil && spec.Annotations.ReadOnly
	if a.opts.DryRun && !readOnly {
		return "", "" // nothing will run: the dry-run stub answers
	}
	_, asked := d.(*hook.Ask)
	if asked || (d == nil && a.opts.Approver != nil && !readOnly) {
		if a.opts.Approver == nil {
			return "approval required, and no approver is configured", CodeApprovalDenied
		}
		areq := &tool.ApprovalRequest{Session: string(a.sid), CallID: s.call.ID, Tool: s.call.Name, Args: s.args, Annotations: spec.Annotations}
		areq.Command, areq.Path = approvalSubject(s.args)
		if ask, ok := d.(*hook.Ask); ok {
			areq.Reason = ask.Reason
		}
		ap, err := a.opts.Approver.Approve(r.ctx, areq)
		if err != nil {
			return "the approver failed: " + err.Error(), CodeApprovalDenied
		}
		r.emit(&session.HookDecision{Point: string(hook.PointApproval), Hook: "approver", Decision: string(ap.Verdict), Reason: ap.Reason, CallID: s.call.ID})
		if ap.Verdict != tool.Allow {
			reason := ap.Reason
			if reason == "" {
				reason = "the call was not approved"
			}
			return reason, CodeApprovalDenied
		}
		return "", ""
	}
	if dn, ok := d.(*hook.Deny); ok {
		reason := dn.Reason
		if reason == "" {
			reason = "the call was not approved"
		}
		return reason, CodeApprovalDenied
	}
	return "", ""
}

// guard applies the repeat guard and the per-tool budgets; it reports
// whether the call is settled.
func (b *batch) guard(s *callState) bool {
	r := b.r
	l := r.a.opts.Limits
	if g := l.Repeat; g.Threshold > 0 {
		key := s.call.Name + "\x00" + string(s.args)
		if key == r.repeatKey {
			r.repeatN++
		} else {
			r.repeatKey, r.repeatN = key, 1
		}
		if r.repeatN >= g.Threshold {
			msg := fmt.Sprintf("%s was called with the same arguments %d times in a row", s.call.Name, r.repeatN)
			switch g.Action {
			case GuardBlock:
				r.emit(&session.HookDecision{Point: "guard.repeat", Hook: "repeat", Decision: hook.DecisionDeny, Reason: msg, CallID: s.call.ID})
				b.settle(s, tool.Errorf("Blocked: %s; try something else", msg), session.OutcomeGateBlock, CodeGuard, false)
				return true
			case GuardAbort:
				r.emit(&session.HookDecision{Point: "guard.repeat", Hook: "repeat", Decision: hook.DecisionStop, Reason: msg, CallID: s.call.ID})
				b.settle(s, tool.Errorf("Blocked: %s; the turn was stopped", msg), session.OutcomeGateBlock, CodeGuard, false)
				b.abort = &turnEnd{reason: session.EndError, msg: msg, code: "repeat-guard", err: &TurnError{Reason: session.EndError, Code: "repeat-guard", Err: errors.New(msg)}}
				return true
			default:
				r.emit(&session.HookDecision{Point: "guard.repeat", Hook: "repeat", Decision: "steer", Reason: msg, CallID: s.call.ID})
				r.queueSteer(msg + ". Repeating it will not give a different result; change your approach.")
			}
		}
	}
	if tb, ok := l.ToolCalls[s.call.Name]; ok && tb.Max > 0 {
		r.toolCounts[s.call.Name]++
		if n := r.toolCounts[s.call.Name]; n > tb.Max {
			msg := fmt.Sprintf("the budget of %d calls of %s in this turn is spent", tb.Max, s.call.Name)
			if tb.Action == GuardSteer {
				r.emit(&session.HookDecision{Point: "guard.tool-budget", Hook: "tool-budget", Decision: "steer", Reason: msg, CallID: s.call.ID})
				r.queueSteer("Note: " + msg + "; finish with what you have.")
			} else {
				r.emit(&session.HookDecision{Point: "guard.tool-budget", Hook: "tool-budget", Decision: hook.DecisionDeny, Reason: msg, CallID: s.call.ID})
				b.settle(s, tool.Errorf("Blocked: %s", msg), session.OutcomeGateBlock, CodeGuard, false)
				return true
			}
		}
	}
	return false
}

func (r *runState) queueSteer(text string) {
	r.a.mu.Lock()
	r.steers = append(r.steers, queued{[]llm.Part{&llm.Text{Text: text}}, session.SourceSystem})
	r.a.mu.Unlock()
}

// dispatch records the call and starts it.
func (b *batch) dispatch(s *callState) {
	r := b.r
	a := r.a
	a.mu.Lock()
	if reason, ok := r.parked[s.call.ID]; ok {
		delete(r.parked, s.call.ID)
		a.mu.Unlock()
		b.settle(s, tool.Errorf("tool call cancelled before it started: %s", reason), session.OutcomeCancelled, CodeCancelled, false)
		return
	}
	a.mu.Unlock()
	r.emit(&session.ToolCall{CallID: s.call.ID, Name: s.call.Name, Args: s.args, Origin: s.entry.origin, Coerced: s.coerced})
	if !r.flush() {
		// A call whose start is not on the record does not run.
		b.settle(s, tool.Errorf(textAbortedBeforeDispatch), session.OutcomeCancelled, CodeAborted, false)
		return
	}
	a.mu.Lock()
	s.ctx, s.cancel = context.WithCancelCause(r.ctx)
	r.running[s.call.ID] = s
	a.mu.Unlock()
	s.start = a.opts.Now()
	b.running++
	s.tc = tool.Call{ID: s.call.ID, Name: s.call.Name, Args: s.args, Session: string(a.sid), Progress: noProgress, Validated: true}
	if f := a.opts.OnProgress; f != nil {
		id := s.call.ID
		s.tc.Progress = func(p tool.Progress) { f(id, p) }
	}
	a.toolsWG.Add(1)
	go exec(a, s, b.done, time.Now())
}

// exec runs one call's body on its own goroutine.
func exec(a *Agent, s *callState, done chan<- completion, start time.Time) {
	defer a.toolsWG.Done()
	var st *tool.StagedState
	if a.opts.State != nil {
		var err error
		if st, err = tool.LoadState(s.ctx, a.opts.State, s.tc.Session, s.entry.spec.Name); err != nil {
			a.finish(s, done, completion{idx: s.idx, err: fmt.Errorf("load the tool's state: %w", err), dur: time.Since(start)})
			return
		}
		s.tc.State = st
	}
	res, err := runTool(s.ctx, s.entry.t, &s.tc)
	if st != nil {
		if err == nil && !res.IsError {
			if cerr := st.Commit(context.WithoutCancel(s.ctx)); cerr != nil {
				a.log.Error("a tool's state was not saved", "tool", s.entry.spec.Name, "call", s.call.ID, "err", cerr)
			}
		} else {
			st.Discard()
		}
	}
	a.finish(s, done, completion{idx: s.idx, res: res, err: err, dur: time.Since(start)})
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
	select {
	case c := <-b.done:
		b.complete(c)
	case <-r.kick:
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
		r.leaked = true
		s.dur = r.a.opts.Now().Sub(s.start)
		b.running--
		if reason != "" {
			b.settle(s, tool.Errorf("tool call cancelled: %s", reason), session.OutcomeCancelled, CodeCancelled, true)
		} else {
			b.settle(s, tool.Errorf(textAborted), session.OutcomeInterrupted, CodeAborted, true)
		}
	}
	b.commit()
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
	switch {
	case reason != "":
		s.interrupted = true
		b.settle(s, tool.Errorf("tool call cancelled: %s", reason), session.OutcomeCancelled, CodeCancelled, true)
	case c.err != nil && r.isCancelled() && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded) || context.Cause(s.ctx) != nil):
		s.interrupted = true
		b.settle(s, tool.Errorf(textAborted), session.OutcomeInterrupted, CodeAborted, true)
	case c.err != nil:
		code := CodeToolError
		var pe *panicError
		if errors.As(c.err, &pe) {
			code = CodeToolPanic
		}
		eout, herr := r.chain.ToolError(r.ctx, &hook.ToolErrorInput{Scope: r.scope(), Call: s.call, Err: c.err})
		r.records(eout.Records, s.call.ID)
		res := tool.Errorf("Tool error: %v", c.err)
		if herr == nil && eout.Substitute != nil {
			res = eout.Substitute.Result
		}
		b.settle(s, res, session.OutcomeExecute, code, true)
	default:
		b.settle(s, c.res, session.OutcomeExecute, "", true)
	}
}

// budget applies the step's tool-output byte budget to a settled result:
// output past it is spilled to a file and the model gets a head and the
// path.
func (b *batch) budget(s *callState) {
	r := b.r
	limit := r.a.opts.Limits.StepOutputBytes
	if limit <= 0 || s.res == nil {
		return
	}
	text := textOf(s.res)
	if r.stepBytes+len(text) <= limit {
		r.stepBytes += len(text)
		return
	}
	room := max(limit-r.stepBytes, 0)
	dir := r.a.opts.SpillDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "rein-spill")
	}
	spilled, err := tool.Spill(s.res, room, dir)
	if err != nil {
		r.a.log.Warn("spilling a tool result failed", "call", s.call.ID, "err", err)
		spilled = &tool.Result{Parts: []llm.Part{&llm.Text{Text: text[:room] + fmt.Sprintf("\n[… %d bytes elided; saving them failed]", len(text)-room)}}, IsError: s.res.IsError, Meta: s.res.Meta}
	}
	r.stepBytes += room
	r.emit(&session.HookDecision{Point: "guard.output", Hook: "output-budget", Decision: "spill", Reason: fmt.Sprintf("the step's tool output went over %d bytes", limit), CallID: s.call.ID})
	parts := append(spilled.Parts[:len(spilled.Parts):len(spilled.Parts)], &llm.Text{Text: "This step's tool output is over its budget; summarise what you need from the saved file instead of reading it all."})
	s.res = &tool.Result{Parts: parts, IsError: spilled.IsError, Meta: spilled.Meta}
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
			res, err = nil, &panicError{r}
		}
	}()
	res, err = t.Call(ctx, call)
	if err == nil && res == nil {
		res = &tool.Result{}
	}
	return res, err
}

// approvalSubject picks the command line or the path a call acts on out of
// its arguments, so that an approver can show it and remember an "always"
// for that command prefix or path rather than for the whole tool.
func approvalSubject(args json.RawMessage) (command, path string) {
	var v struct {
		Command  string `json:"command"`
		Path     string `json:"path"`
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(args, &v) != nil {
		return "", ""
	}
	if v.Path == "" {
		v.Path = v.FilePath
	}
	return v.Command, v.Path
}
