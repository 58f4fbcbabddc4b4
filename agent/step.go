package agent

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// openStep delivers what is queued, checks the turn may go on, compacts
// when due, and writes the step's start and header in one write.
func (r *runState) openStep() *turnEnd {
	a := r.a
	r.deliver()
	if r.isCancelled() {
		return r.aborted()
	}
	if r.suspending() {
		return &turnEnd{reason: session.EndSuspended}
	}
	if r.step >= r.maxSteps {
		return &turnEnd{reason: session.EndMaxSteps, msg: fmt.Sprintf("the turn reached its limit of %d steps", r.maxSteps)}
	}
	spent := r.spentMeter()
	if berr := spent.overBudget(a.opts.Limits); berr != nil {
		return &turnEnd{reason: session.EndBudget, msg: berr.Error(), code: berr.Budget, err: berr}
	}
	r.compactIfDue()
	if r.fatal != nil {
		return errorEnd("", nil)
	}
	r.step++
	r.meter.steps++
	r.guards.stepBytes = 0
	r.meter.stepStart = a.opts.Now()
	r.emit(&session.StepStart{Step: r.step})
	a.refreshTools()
	r.useTools(a.tb.Load())
	r.header(r.step == 1, "")
	if !r.flush() {
		return errorEnd("", nil)
	}
	return nil
}

// runStep makes the step's request, records the answer, runs the tools it
// asked for and closes the step; it returns the turn's end, or nil when
// the turn goes on.
func (r *runState) runStep() *turnEnd {
	req, end := r.prepare()
	if end != nil {
		return end
	}
	asm, status, merr := r.callModel(req)
	switch status {
	case modelCancelled:
		r.interrupted(asm)
		r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishAborted})
		return r.aborted()
	case modelFailed:
		r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishError})
		return errorEnd(string(llm.KindOf(merr)), merr)
	}
	finish := asm.FinishReason()
	var msg llm.Message
	if finish == llm.FinishMaxTokens {
		msg = asm.Partial() // the calls of a cut-off response are dropped whole
	} else {
		msg = asm.Message()
	}
	r.dedupeCalls(&msg)
	u := asm.Usage()
	if len(msg.Parts) > 0 || finish != llm.FinishStop {
		r.emit(&session.AssistantMessage{Parts: msg.Parts, Provenance: msg.Provenance, Usage: u, Finish: finish})
	}
	r.meter.add(r.a.opts.Cost, msg.Provenance, u)
	return r.answer(&msg, u, finish, nil)
}

// answer takes the step's answer on: its tool calls (of plan, on a
// resume), the step's end, and an answer's checks.
func (r *runState) answer(msg *llm.Message, u llm.Usage, finish llm.FinishReason, plan *resumePlan) *turnEnd {
	r.final, r.hasFinal = *msg, true
	hasCalls := finish != llm.FinishMaxTokens && hasToolCall(msg.Parts)
	var abort *turnEnd
	if hasCalls {
		abort = r.runTools(msg.Parts, plan) // the assistant message is written with the first tool.call
		if abort != nil && abort.reason == session.EndSuspended {
			return abort // the step stays open
		}
	}
	if end := r.closeStep(msg, u, finish, abort, hasCalls); end != nil || hasCalls {
		return end
	}
	return r.answered(msg)
}

func hasToolCall(parts []llm.Part) bool {
	for _, p := range parts {
		if _, ok := p.(*llm.ToolCall); ok {
			return true
		}
	}
	return false
}

// interrupted records the streamed part of a cancelled response.
func (r *runState) interrupted(asm *llm.Assembler) {
	if asm == nil {
		return
	}
	if m := asm.Partial(); len(m.Parts) > 0 {
		r.emit(&session.AssistantMessage{Parts: m.Parts, Provenance: m.Provenance, Usage: asm.Usage(), Finish: llm.FinishAborted, Interrupted: true})
		r.meter.add(r.a.opts.Cost, m.Provenance, asm.Usage())
	}
}

// prepare builds the step's request and runs the before-request chain:
// the request to send, or the turn's end.
func (r *runState) prepare() (*llm.Request, *turnEnd) {
	req, err := r.request()
	if err != nil {
		r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishError})
		return nil, errorEnd("pairing", err)
	}
	if !r.chain.Has(hook.Request) {
		return req, nil
	}
	derived := req.Messages
	out, err := hook.Request.Run(r.ctx, r.chain, &hook.RequestInput{Scope: r.scope(), Request: req})
	if err != nil {
		r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishError})
		return nil, errorEnd("hook", err)
	}
	if st := out.Stop; st != nil {
		if st.Answer != "" {
			m := llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: st.Answer}}, Provenance: &llm.Provenance{Provider: "hook", Model: out.Hook}}
			r.emit(&session.AssistantMessage{Parts: m.Parts, Provenance: m.Provenance, Finish: llm.FinishStop})
			r.final, r.hasFinal = m, true
		}
		r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishStop})
		if st.Answer != "" {
			return nil, &turnEnd{reason: session.EndCompleted, msg: st.Reason}
		}
		return nil, &turnEnd{reason: session.EndBlocked, msg: st.Reason}
	}
	if out.Replaced {
		r.replaced(out.Request, out.Hook, derived)
	}
	if !r.flush() {
		return nil, errorEnd("", nil)
	}
	return out.Request, nil
}

// closeStep runs the step-end chain and queues the step's end; it
// returns the turn's end, if this step ends it. A step that ran tools is
// not written on its own: its last results and its end go with the next
// write, the next step's start (after what the boundary delivers) or the
// turn's end, so a step costs two writes. Nobody has seen them before
// that write (observers get events once written). An answer's step is
// written at once: the finalize chain and the output check act on it.
func (r *runState) closeStep(msg *llm.Message, u llm.Usage, finish llm.FinishReason, abort *turnEnd, ranTools bool) *turnEnd {
	var sout hook.StepEndOutcome
	var serr error
	if r.chain.Has(hook.StepEnd) {
		in := &hook.StepEndInput{Scope: r.scope(), Message: &llm.Message{Role: msg.Role, Parts: msg.Parts, Provenance: msg.Provenance}, Usage: u, Finish: finish}
		sout, serr = hook.StepEnd.Run(r.ctx, r.chain, in)
	}
	r.emit(&session.StepEnd{Step: r.step, Usage: u, Finish: finish})
	if !ranTools {
		r.flush()
	}
	switch {
	case r.fatal != nil:
		return errorEnd("", nil)
	case r.isCancelled():
		return r.aborted()
	case abort != nil:
		return abort
	case serr != nil:
		return errorEnd("hook", serr)
	case sout.Stop != nil:
		return &turnEnd{reason: session.EndBlocked, msg: sout.Stop.Reason}
	case finish == llm.FinishMaxTokens:
		return &turnEnd{reason: session.EndMaxTokens, msg: "the model reached its output token limit"}
	}
	return nil
}

// answered handles an answer without a tool call: the output schema, the
// finalize chain, then what is queued; nil when the turn goes on.
func (r *runState) answered(msg *llm.Message) *turnEnd {
	if r.output.v != nil {
		out, verr := r.output.check(msg.Text())
		switch {
		case verr == nil:
			r.output.value = out
		case !r.output.retried:
			r.output.retried = true
			r.emit(&session.UserMessage{Source: session.SourceSystem, Parts: []llm.Part{&llm.Text{Text: "Your answer is not valid JSON for the requested schema: " + verr.Error() + ". Reply again with only the JSON value."}}})
			return nil
		default:
			return &turnEnd{reason: session.EndError, msg: verr.Error(), code: "invalid-output", err: fmt.Errorf("%w: %v", ErrInvalidOutput, verr)}
		}
	}
	fout, ferr := hook.Finalize.Run(r.ctx, r.chain, &hook.FinalizeInput{Scope: r.scope(), Message: &llm.Message{Role: msg.Role, Parts: msg.Parts, Provenance: msg.Provenance}})
	switch {
	case ferr != nil:
		return errorEnd("hook", ferr)
	case fout.Nudge != nil:
		text := fout.Nudge.Text
		if text == "" {
			text = "Continue."
		}
		r.emit(&session.UserMessage{Source: session.SourceHook, Parts: []llm.Part{&llm.Text{Text: text}}})
		return nil
	case fout.Stop != nil:
		r.endQueues()
		return &turnEnd{reason: session.EndCompleted, msg: fout.Stop.Reason}
	case r.more():
		return nil
	}
	return &turnEnd{reason: session.EndCompleted}
}

// request builds this step's request from the derived history and
// records the pairing repairs it needs.
func (r *runState) request() (*llm.Request, error) {
	a := r.a
	r.w.mu.Lock()
	msgs := r.w.hist.view()
	reps := r.w.hist.repairs()
	r.w.mu.Unlock()
	if len(reps) > 0 {
		if a.opts.StrictPairing {
			return nil, fmt.Errorf("%w: %s of call %s", ErrUnpaired, reps[0].Kind, reps[0].CallID)
		}
		for i := range reps {
			r.emit(&reps[i])
		}
	}
	// The Model contract lets the caller reuse a request once its stream
	// is done, so each step refills the run's one request.
	req := &r.req
	*req = a.template
	req.Model = a.targets[r.target].Model
	req.System = a.sys.parts
	req.Tools = r.tb.specs
	req.Messages = msgs
	if len(r.output.schema) > 0 {
		req.ResponseFormat = &llm.ResponseFormat{Name: "output", Schema: r.output.schema}
	}
	return req, nil
}

// header writes a request header when the turn starts or what it names
// changes; reason overrides the one it would give.
func (r *runState) header(first bool, reason string) {
	a := r.a
	keys := *a.keys.Load()
	if !r.w.header(keys[r.target], first) {
		return
	}
	if reason == "" {
		reason = "initial"
		if !first {
			reason = "change"
		}
	}
	t := a.targets[r.target]
	r.emit(&session.RequestHeader{Provider: t.Provider, Model: t.Model, Sampling: a.sampling, System: a.sys.parts, SystemHash: a.sys.hash, Tools: r.tb.names, ToolsHash: r.tb.hash, Reason: reason})
}

// ReplacedRequest is the detail of the hook.decision that records a
// request a before-request hook replaced: the request as sent, its
// messages left out when they were the derived history's own (Derived),
// so the log stays proportional to what is new.
type ReplacedRequest struct {
	Request *llm.Request `json:"request"`
	// Derived reports that the request's messages were the history
	// derived from the log before this event, unchanged.
	Derived bool `json:"derived,omitempty"`
}

// replaced records a request a hook replaced, well enough to rebuild it
// from the log: a header naming what it holds (reason "replace"), and the
// request in the hook's decision (see ReplacedRequest).
func (r *runState) replaced(req *llm.Request, by string, derived []llm.Message) {
	rec := ReplacedRequest{Request: req}
	if sameMessages(req.Messages, derived) {
		cp := *req
		cp.Messages = nil
		rec.Request, rec.Derived = &cp, true
	}
	detail, err := json.Marshal(rec)
	if err != nil {
		r.a.log.Warn("a replaced request could not be recorded whole", "session", r.sid, "err", err)
		detail = nil
	}
	r.emit(&session.RequestHeader{Provider: r.a.targets[r.target].Provider, Model: req.Model, Sampling: samplingOf(req), System: req.System, SystemHash: systemHash(req.System), Tools: toolNames(req.Tools), Reason: "replace"})
	r.emit(&session.HookDecision{Point: string(hook.PointRequest), Hook: by, Decision: hook.DecisionReplace, Reason: "the request was replaced", Detail: detail})
	r.w.header("", false) // the next step's header is due again
}

// sameMessages reports whether a and b are the same messages (not equal
// ones: the same parts).
func sameMessages(a, b []llm.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Role != b[i].Role || len(a[i].Parts) != len(b[i].Parts) || (len(a[i].Parts) > 0 && &a[i].Parts[0] != &b[i].Parts[0]) {
			return false
		}
	}
	return true
}

func toolNames(specs []llm.ToolSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// dedupeCalls renames the calls of a response whose id was used before,
// and records each rename.
func (r *runState) dedupeCalls(m *llm.Message) {
	parts, reps := r.w.dedupeCalls(m.Parts)
	m.Parts = parts
	for i := range reps {
		r.emit(&reps[i])
	}
}
