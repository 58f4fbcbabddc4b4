package agent

import (
	"encoding/json"
	"fmt"
	"strings"

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

// toolRun is what the tool pipeline sees of its run, which implements it:
// the log (emit, flush), the scope of its hooks, the step's tools, the
// report function of a call, and the turn's end when a gate stops it. The
// run's context, hooks and turn control come with the pipeline.
type toolRun interface {
	emit(session.Payload)
	flush() bool
	scope() hook.Scope
	entry(name string) *toolEntry
	progress(id llm.CallID) func(tool.Progress)
	stopEnd(hookName string, st *hook.Stop) *turnEnd
	sync() error
}

// verdict is how the pipeline settled a call that will not run: its
// result, outcome and code, and whether the post notification is due.
type verdict struct {
	res      *tool.Result
	outcome  string
	code     string
	executed bool
}

func blocked(code, format string, args ...any) *verdict {
	return &verdict{res: tool.Errorf(format, args...), outcome: session.OutcomeGateBlock, code: code}
}

// admitCall runs the pipeline of one call up to execution: gate →
// unknown-tool check → validation with coercion → pre-tool-use (edits
// validated again; the built-in guards are its last handlers) → approval.
// It returns nil when the call may run (s.args set), else how it settled.
func (b *batch) admitCall(s *callState) *verdict {
	s.entry = b.run.entry(s.call.Name)
	var spec *tool.Spec
	if s.entry != nil {
		spec = &s.entry.spec
	}
	if v := b.gate(s, hook.ToolGate, spec, false); v != nil {
		return v
	}
	if s.entry == nil {
		return b.unknown(s)
	}
	args, coerced, err := s.entry.v.validate(s.call.Args)
	if err != nil {
		return invalid(err)
	}
	s.args, s.coerced = args, coerced
	if v := b.gate(s, hook.PreToolUse, spec, true); v != nil {
		return v
	}
	if reason, code := b.approve(s, spec); reason != "" {
		return blocked(code, "Blocked: %s", reason)
	}
	return nil
}

func invalid(err error) *verdict {
	return &verdict{res: &tool.Result{Parts: []llm.Part{&llm.Text{Text: err.Error()}}, IsError: true}, outcome: session.OutcomeInvalidInput, code: CodeInvalidInput}
}

// gate runs a gate chain on s: the tool gate, or pre-tool-use once the
// arguments are validated. An edit is taken up (and validated again after
// validation); a deny, a stop or a substitute settles the call.
func (b *batch) gate(s *callState, p *hook.PointDef[*hook.ToolInput, hook.GateDecision, hook.GateOutcome], spec *tool.Spec, validated bool) *verdict {
	if !b.chain.Has(p) {
		return nil
	}
	in := &hook.ToolInput{Scope: b.run.scope(), Call: s.call, Spec: spec, Validated: validated}
	if validated {
		in.Call.Args = s.args
	}
	out, err := p.Run(b.ctx, b.chain, in)
	switch {
	case err != nil:
		return blocked(CodeHookError, "Blocked: %v", err)
	case out.Stop != nil:
		b.abort = b.run.stopEnd(out.Hook, out.Stop)
		return blocked(codeOf(out.Hook), "Blocked: %s; the turn was stopped", orDefault(out.Stop.Reason))
	case out.Denied != nil:
		return blocked(codeOf(out.Hook), "Blocked: %s", orDefault(out.Denied.Reason))
	case out.Substitute != nil:
		return &verdict{res: out.Substitute.Result, outcome: session.OutcomeSubstitute, executed: true}
	case out.Args == nil:
		return nil
	case !validated:
		s.call.Args = out.Args
		return nil
	}
	args, coerced, verr := s.entry.v.validate(out.Args)
	if verr != nil {
		return invalid(verr)
	}
	s.call.Args = out.Args
	s.args, s.coerced = args, append(s.coerced, coerced...)
	return nil
}

func orDefault(reason string) string {
	if reason == "" {
		return defaultBlockReason
	}
	return reason
}

// codeOf is the result code of a call a handler blocked.
func codeOf(hookName string) string {
	if isGuard(hookName) {
		return CodeGuard
	}
	return CodeBlocked
}

// unknown settles a call of a tool that does not exist.
func (b *batch) unknown(s *callState) *verdict {
	out, err := hook.UnknownTool.Run(b.ctx, b.chain, &hook.UnknownToolInput{Scope: b.run.scope(), Call: s.call})
	v := &verdict{res: tool.Errorf("Unknown tool: %s", s.call.Name), outcome: session.OutcomeUnknown, code: CodeUnknownTool}
	switch {
	case err != nil:
		v.code = CodeHookError
	case out.Substitute != nil:
		v.res, v.code = out.Substitute.Result, ""
	}
	return v
}

// approve returns a non-empty reason when the call may not run.
func (b *batch) approve(s *callState, spec *tool.Spec) (string, string) {
	if b.x.approver == nil && !b.chain.Has(hook.Approval) {
		return "", ""
	}
	in := &hook.ToolInput{Scope: b.run.scope(), Call: s.call, Spec: spec, Validated: true}
	in.Call.Args = s.args
	aout, err := hook.Approval.Run(b.ctx, b.chain, in)
	if err != nil {
		return err.Error(), CodeHookError
	}
	d := aout.Decision
	readOnly := spec.Annotations != nil && spec.Annotations.ReadOnly
	if b.x.dryRun && !readOnly {
		return "", "" // nothing will run: the dry-run stub answers
	}
	ask, asked := d.(*hook.Ask)
	if asked || (d == nil && b.x.approver != nil && !readOnly) {
		reason := ""
		if asked {
			reason = ask.Reason
		}
		return b.askApprover(s, spec, reason, asked)
	}
	if dn, ok := d.(*hook.Deny); ok {
		if dn.Reason == "" {
			return "the call was not approved", CodeApprovalDenied
		}
		return dn.Reason, CodeApprovalDenied
	}
	return "", ""
}

// askApprover asks the agent's approver about a call and records its
// answer; with no approver, the call is denied. hookAsked says a handler
// answered Ask, which the approver must put to someone.
func (b *batch) askApprover(s *callState, spec *tool.Spec, reason string, hookAsked bool) (string, string) {
	ap := b.x.approver
	if ap == nil {
		return "approval required, and no approver is configured", CodeApprovalDenied
	}
	subj := tool.SubjectOf(s.entry.t, s.args)
	areq := &tool.ApprovalRequest{Session: string(b.run.scope().Session), CallID: s.call.ID, Tool: s.call.Name, Args: s.args,
		Annotations: spec.Annotations, Command: subj.Command, Path: subj.Path, Reason: reason, HookAsked: hookAsked}
	ans, err := ap.Approve(b.ctx, areq)
	if err != nil {
		return "the approver failed: " + err.Error(), CodeApprovalDenied
	}
	b.run.emit(&session.HookDecision{Point: string(hook.PointApproval), Hook: "approver", Decision: string(ans.Verdict), Reason: ans.Reason, CallID: s.call.ID})
	if ans.Verdict != tool.Allow {
		if ans.Reason == "" {
			return "the call was not approved", CodeApprovalDenied
		}
		return ans.Reason, CodeApprovalDenied
	}
	return "", ""
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
