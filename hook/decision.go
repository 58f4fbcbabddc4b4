package hook

import (
	"encoding/json"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Decision names as recorded in hook.decision events.
const (
	DecisionContinue   = "continue"
	DecisionEdit       = "edit"
	DecisionDeny       = "deny"
	DecisionSubstitute = "substitute"
	DecisionStop       = "stop"
	DecisionReplace    = "replace"
	DecisionRewrite    = "rewrite"
	DecisionNudge      = "nudge"
	DecisionAllow      = "allow"
	DecisionAsk        = "ask"
)

// Decision is implemented by every decision type. Kind is the decision's
// name in a hook.decision event, and "" for a typed nil, which means "no
// decision" like a nil interface does. A host that declares its own point
// may declare its own decision types.
type Decision interface {
	Kind() string
}

// PromptDecision is a prompt-submit handler's decision: *EditPrompt or *Deny.
type PromptDecision interface {
	Decision
	isPromptDecision()
}

// RequestDecision is a before-request handler's decision: *ReplaceRequest,
// *RewriteMessages or *Stop.
type RequestDecision interface {
	Decision
	isRequestDecision()
}

// GateDecision is a tool gate handler's decision: *EditArgs, *Deny,
// *Substitute or *Stop (deny the call and end the turn).
type GateDecision interface {
	Decision
	isGateDecision()
}

// ApprovalDecision is an approval handler's decision: *Allow, *Ask or *Deny.
type ApprovalDecision interface {
	Decision
	isApprovalDecision()
}

// ResultDecision is a tool result handler's decision: *RewriteResult.
type ResultDecision interface {
	Decision
	isResultDecision()
}

// SubstituteDecision is the decision of a tool-error or unknown-tool
// handler: *Substitute.
type SubstituteDecision interface {
	Decision
	isSubstituteDecision()
}

// FinalizeDecision is a finalize handler's decision: *Nudge (continue the
// turn) or *Stop (end it now).
type FinalizeDecision interface {
	Decision
	isFinalizeDecision()
}

// StepEndDecision is a step-end handler's decision: *Stop.
type StepEndDecision interface {
	Decision
	isStepEndDecision()
}

// Notice is the decision type of notifications: none exists, so their
// handlers always return nil.
type Notice interface {
	Decision
	isNotice()
}

// Deny refuses: a prompt never reaches the model, a tool call never runs
// (its result is "Blocked: <Reason>"), an approval is refused.
type Deny struct {
	Reason string
}

// EditPrompt replaces the prompt's parts.
type EditPrompt struct {
	Parts []llm.Part
}

// EditArgs replaces a tool call's arguments. The new arguments are
// validated again; invalid ones are rejected like invalid model input.
type EditArgs struct {
	Args json.RawMessage
}

// Substitute answers a tool call with Result instead of running the tool
// (gate), or replaces the result of a failed or unknown call.
type Substitute struct {
	Result *tool.Result
	Reason string
}

// ReplaceRequest replaces the whole model request of this step. The
// handler must not modify the request it was given; it returns a new one.
type ReplaceRequest struct {
	Request *llm.Request
}

// RewriteMessages replaces the messages of this one request. The log is
// untouched, so the next request is built from the log again.
type RewriteMessages struct {
	Messages []llm.Message
}

// Stop ends the turn. Before a request, Answer (when set) is recorded as
// the assistant's final answer and no request is sent.
type Stop struct {
	Answer string
	Reason string
}

// RewriteResult replaces a tool's result before the model sees it.
type RewriteResult struct {
	Result *tool.Result
	Reason string
	// Label, when set, names the rewrite on its record instead of
	// "rewrite" (for example "spill").
	Label string
}

// Nudge continues a turn the model wanted to end, with Text as a new user
// message. The continuation counts as a step.
type Nudge struct {
	Text string
}

// Allow approves a tool call. Always asks the approver to remember the
// approval for the rest of the session.
type Allow struct {
	Reason string
	Always bool
}

// Ask defers an approval to the agent's approver; with none, it is denied.
type Ask struct {
	Reason string
}

// kind is a decision's name, or "" when the decision is a typed nil.
func kind(isNil bool, name string) string {
	if isNil {
		return ""
	}
	return name
}

// Kind returns "deny".
func (d *Deny) Kind() string { return kind(d == nil, DecisionDeny) }

// Kind returns "edit".
func (d *EditPrompt) Kind() string { return kind(d == nil, DecisionEdit) }

// Kind returns "edit".
func (d *EditArgs) Kind() string { return kind(d == nil, DecisionEdit) }

// Kind returns "substitute".
func (d *Substitute) Kind() string { return kind(d == nil, DecisionSubstitute) }

// Kind returns "replace".
func (d *ReplaceRequest) Kind() string { return kind(d == nil, DecisionReplace) }

// Kind returns "rewrite".
func (d *RewriteMessages) Kind() string { return kind(d == nil, DecisionRewrite) }

// Kind returns "stop".
func (d *Stop) Kind() string { return kind(d == nil, DecisionStop) }

// Kind returns the rewrite's Label, or "rewrite".
func (d *RewriteResult) Kind() string {
	switch {
	case d == nil:
		return ""
	case d.Label != "":
		return d.Label
	}
	return DecisionRewrite
}

// Kind returns "nudge".
func (d *Nudge) Kind() string { return kind(d == nil, DecisionNudge) }

// Kind returns "allow".
func (d *Allow) Kind() string { return kind(d == nil, DecisionAllow) }

// Kind returns "ask".
func (d *Ask) Kind() string { return kind(d == nil, DecisionAsk) }

func (*Deny) isPromptDecision()             {}
func (*EditPrompt) isPromptDecision()       {}
func (*ReplaceRequest) isRequestDecision()  {}
func (*RewriteMessages) isRequestDecision() {}
func (*Stop) isRequestDecision()            {}
func (*EditArgs) isGateDecision()           {}
func (*Deny) isGateDecision()               {}
func (*Substitute) isGateDecision()         {}
func (*Allow) isApprovalDecision()          {}
func (*Ask) isApprovalDecision()            {}
func (*Deny) isApprovalDecision()           {}
func (*RewriteResult) isResultDecision()    {}
func (*Substitute) isSubstituteDecision()   {}
func (*Nudge) isFinalizeDecision()          {}
func (*Stop) isFinalizeDecision()           {}
func (*Stop) isStepEndDecision()            {}
func (*Stop) isGateDecision()               {}
func (d *Deny) reason() string              { return d.Reason }
func (d *Substitute) reason() string        { return d.Reason }
func (d *Stop) reason() string              { return d.Reason }
func (d *Allow) reason() string             { return d.Reason }
func (d *Ask) reason() string               { return d.Reason }
func (d *RewriteResult) reason() string     { return d.Reason }

// reasonOf is the reason a decision gives, for its record.
func reasonOf(d Decision) string {
	if r, ok := d.(interface{ reason() string }); ok {
		return r.reason()
	}
	return ""
}
