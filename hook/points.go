package hook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// The interception points' names, in the order a turn meets them.
const (
	PointPrompt      Point = "prompt"       // a prompt is submitted
	PointRequest     Point = "request"      // before each model request
	PointToolGate    Point = "tool-gate"    // before a tool call is validated and run
	PointPreToolUse  Point = "pre-tool-use" // after validation, before approval: edits are revalidated
	PointApproval    Point = "approval"     // a validated call asks to run
	PointToolResult  Point = "tool-result"  // a tool returned, before the model sees it
	PointToolError   Point = "tool-error"   // a tool failed or panicked
	PointUnknownTool Point = "unknown-tool" // the model named a tool that does not exist
	PointFinalize    Point = "finalize"     // the model answered without a tool call
	PointStepEnd     Point = "step-end"     // after each step
	PointPostTool    Point = "post-tool"    // notification: an executed call ended
	PointDispatched  Point = "dispatched"   // notification: a call was settled
)

// Scope says where an input comes from.
type Scope struct {
	Session session.ID
	Turn    session.TurnID
	Run     session.RunID
	Agent   string
	Step    int // 0 before the first step
}

// PromptInput is the input of a prompt-submit handler.
type PromptInput struct {
	Scope
	Parts  []llm.Part
	Source string // user, follow-up, …
}

// PromptFunc handles a prompt submit: continue (nil), *EditPrompt or *Deny.
type PromptFunc = Handler[*PromptInput, PromptDecision]

// PromptOutcome is the result of the prompt-submit chain.
type PromptOutcome struct {
	Parts  []llm.Part // the prompt after edits
	Denied *Deny      // non-nil when a handler denied it (Hook names it)
	Trail
}

// Prompt is the prompt-submit point: an edit feeds the next handler, a
// deny ends the chain.
var Prompt = NewPoint[*PromptInput, PromptDecision, PromptOutcome](PointPrompt,
	func(in *PromptInput) PromptOutcome { return PromptOutcome{Parts: in.Parts} }, promptFold)

func promptFold(out *PromptOutcome, in *PromptInput, name string, d PromptDecision) bool {
	if e, ok := d.(*EditPrompt); ok {
		in.Parts, out.Parts = e.Parts, e.Parts
		return true
	}
	if deny, ok := d.(*Deny); ok {
		return settle(&out.Denied, &out.Hook, deny, name)
	}
	return true
}

// RequestInput is the input of a before-request handler. Request is shared
// with the loop and valid only during the call: a handler must not modify
// or keep it, and returns a *ReplaceRequest or *RewriteMessages instead.
type RequestInput struct {
	Scope
	Request *llm.Request
}

// RequestFunc handles the point before a model request: continue (nil),
// *ReplaceRequest, *RewriteMessages or *Stop.
type RequestFunc = Handler[*RequestInput, RequestDecision]

// RequestOutcome is the result of the before-request chain.
type RequestOutcome struct {
	Request *llm.Request // the request to send (the input's unless replaced or rewritten)
	// Replaced is set when a handler replaced the whole request; Hook
	// names the last that did.
	Replaced bool
	Stop     *Stop // non-nil when a handler stopped the turn (Hook names it)
	Trail
}

// Request is the before-request point. A rewrite copies the request, so
// the input's message slice is never modified; a stop ends the chain.
var Request = NewPoint[*RequestInput, RequestDecision, RequestOutcome](PointRequest,
	func(in *RequestInput) RequestOutcome { return RequestOutcome{Request: in.Request} },
	func(out *RequestOutcome, in *RequestInput, name string, d RequestDecision) bool {
		switch d := d.(type) {
		case *ReplaceRequest:
			if d.Request != nil {
				in.Request, out.Request, out.Replaced, out.Hook = d.Request, d.Request, true, name
			}
		case *RewriteMessages:
			r := *in.Request
			r.Messages = d.Messages
			in.Request, out.Request = &r, &r
		case *Stop:
			return settle(&out.Stop, &out.Hook, d, name)
		}
		return true
	})

// settle keeps d, the decision that ends a chain, and the name of its
// handler, and reports that no later handler runs.
func settle[D any](slot *D, hook *string, d D, name string) (more bool) {
	*slot, *hook = d, name
	return false
}

// ToolInput is the input of a tool gate, pre-tool-use or approval handler.
type ToolInput struct {
	Scope
	Call llm.ToolCall
	// Spec is the tool's spec, or nil when the model named an unknown tool.
	Spec *tool.Spec
	// Validated reports whether Call.Args passed validation: true at
	// pre-tool-use and approval, false at the gate, which runs first.
	Validated bool
}

func (in *ToolInput) callID() llm.CallID { return in.Call.ID }

// GateFunc handles a tool gate or pre-tool-use point: continue (nil),
// *EditArgs, *Deny, *Substitute or *Stop.
type GateFunc = Handler[*ToolInput, GateDecision]

// GateOutcome is the result of a tool gate chain.
type GateOutcome struct {
	Args       json.RawMessage // the arguments after edits; nil when unchanged
	Denied     *Deny
	Substitute *Substitute
	// Stop, with Denied, blocks the call and ends the turn after the
	// step's calls are settled.
	Stop *Stop
	Trail
}

func gateFold(out *GateOutcome, in *ToolInput, name string, d GateDecision) bool {
	switch d := d.(type) {
	case *EditArgs:
		in.Call.Args, out.Args = d.Args, d.Args
	case *Deny:
		out.Substitute = nil
		return settle(&out.Denied, &out.Hook, d, name)
	case *Stop:
		out.Stop, out.Substitute = d, nil
		return settle(&out.Denied, &out.Hook, &Deny{Reason: d.Reason}, name)
	case *Substitute:
		if out.Substitute == nil {
			out.Substitute, out.Hook = d, name
		}
	}
	return true
}

func gateStart(*ToolInput) GateOutcome { return GateOutcome{} }

// ToolGate is the tool gate point, before the unknown-tool check and
// validation: an edit feeds the next handler; a deny (or stop) ends the
// chain and wins over a substitute from an earlier handler.
var ToolGate = NewPoint[*ToolInput, GateDecision, GateOutcome](PointToolGate, gateStart, gateFold)

// PreToolUse is the pre-tool-use point, after validation, with the rules
// of ToolGate; edited arguments are validated again.
var PreToolUse = NewPoint[*ToolInput, GateDecision, GateOutcome](PointPreToolUse, gateStart, gateFold)

// ApprovalFunc handles approval: no opinion (nil), *Allow, *Ask or *Deny.
type ApprovalFunc = Handler[*ToolInput, ApprovalDecision]

// ApprovalOutcome is the result of the approval chain. With no decision
// from any handler, Decision is nil and the agent's approver decides.
type ApprovalOutcome struct {
	Decision ApprovalDecision
	Trail
}

// Approval is the approval point. A deny ends it; otherwise the strictest
// decision wins (ask over allow).
var Approval = NewPoint[*ToolInput, ApprovalDecision, ApprovalOutcome](PointApproval,
	func(*ToolInput) ApprovalOutcome { return ApprovalOutcome{} },
	func(out *ApprovalOutcome, _ *ToolInput, name string, d ApprovalDecision) bool {
		switch d.(type) {
		case *Deny:
			return settle(&out.Decision, &out.Hook, d, name)
		case *Ask:
			out.Decision, out.Hook = d, name
		case *Allow:
			if out.Decision == nil {
				out.Decision, out.Hook = d, name
			}
		}
		return true
	})

// ToolResultInput is the input of a tool-result handler.
type ToolResultInput struct {
	Scope
	Call     llm.ToolCall
	Result   *tool.Result
	Outcome  string // execute, gate-block, substitute, …
	Duration time.Duration
}

func (in *ToolResultInput) callID() llm.CallID { return in.Call.ID }

// ToolResultFunc handles a tool's result: keep it (nil) or *RewriteResult.
type ToolResultFunc = Handler[*ToolResultInput, ResultDecision]

// ResultOutcome is the result of the tool-result chain.
type ResultOutcome struct {
	Result *tool.Result
	Trail
}

// ToolResult is the tool-result point; each rewrite feeds the next handler.
var ToolResult = NewPoint[*ToolResultInput, ResultDecision, ResultOutcome](PointToolResult,
	func(in *ToolResultInput) ResultOutcome { return ResultOutcome{Result: in.Result} },
	func(out *ResultOutcome, in *ToolResultInput, _ string, d ResultDecision) bool {
		if d, ok := d.(*RewriteResult); ok && d.Result != nil {
			in.Result, out.Result = d.Result, d.Result
		}
		return true
	})

// ToolErrorInput is the input of a tool-error handler.
type ToolErrorInput struct {
	Scope
	Call llm.ToolCall
	Err  error
}

func (in *ToolErrorInput) callID() llm.CallID { return in.Call.ID }

// UnknownToolInput is the input of an unknown-tool handler.
type UnknownToolInput struct {
	Scope
	Call llm.ToolCall
}

func (in *UnknownToolInput) callID() llm.CallID { return in.Call.ID }

// ToolErrorFunc handles a tool's failure: the default "Tool error: …"
// result (nil) or *Substitute.
type ToolErrorFunc = Handler[*ToolErrorInput, SubstituteDecision]

// UnknownToolFunc handles a call of a tool that does not exist: the
// default "Unknown tool: …" result (nil) or *Substitute.
type UnknownToolFunc = Handler[*UnknownToolInput, SubstituteDecision]

// SubstituteOutcome is the result of the tool-error and unknown-tool chains.
type SubstituteOutcome struct {
	Substitute *Substitute // the first substitute; nil for the default result
	Trail
}

func substituteStart[I any](I) SubstituteOutcome { return SubstituteOutcome{} }

func substituteFold[I any](out *SubstituteOutcome, _ I, name string, d SubstituteDecision) bool {
	if s, ok := d.(*Substitute); ok && s.Result != nil {
		return settle(&out.Substitute, &out.Hook, s, name)
	}
	return true
}

// ToolError is the tool-error point; the first substitute ends it.
var ToolError = NewPoint[*ToolErrorInput, SubstituteDecision, SubstituteOutcome](PointToolError,
	substituteStart[*ToolErrorInput], substituteFold[*ToolErrorInput])

// UnknownTool is the unknown-tool point; the first substitute ends it.
var UnknownTool = NewPoint[*UnknownToolInput, SubstituteDecision, SubstituteOutcome](PointUnknownTool,
	substituteStart[*UnknownToolInput], substituteFold[*UnknownToolInput])

// FinalizeInput is the input of a finalize handler: the model answered
// without asking for a tool.
type FinalizeInput struct {
	Scope
	Message *llm.Message
}

// FinalizeFunc handles a final answer: end the turn (nil or *Stop) or
// continue it with a *Nudge.
type FinalizeFunc = Handler[*FinalizeInput, FinalizeDecision]

// FinalizeOutcome is the result of the finalize chain.
type FinalizeOutcome struct {
	Nudge *Nudge // continue the turn with this message
	Stop  *Stop  // end the turn now, even if follow-ups are queued
	Trail
}

// Finalize is the finalize point; the first nudge or stop ends it.
var Finalize = NewPoint[*FinalizeInput, FinalizeDecision, FinalizeOutcome](PointFinalize,
	func(*FinalizeInput) FinalizeOutcome { return FinalizeOutcome{} },
	func(out *FinalizeOutcome, _ *FinalizeInput, name string, d FinalizeDecision) bool {
		switch d := d.(type) {
		case *Nudge:
			out.Nudge, out.Hook = d, name
		case *Stop:
			out.Stop, out.Hook = d, name
		}
		return false
	})

// StepEndInput is the input of a step-end handler.
type StepEndInput struct {
	Scope
	Message *llm.Message // the step's assistant message
	Usage   llm.Usage
	Finish  llm.FinishReason
}

// StepEndFunc handles the end of a step: go on (nil) or *Stop.
type StepEndFunc = Handler[*StepEndInput, StepEndDecision]

// StepEndOutcome is the result of the step-end chain.
type StepEndOutcome struct {
	Stop *Stop
	Trail
}

// StepEnd is the step-end point; the first stop ends it.
var StepEnd = NewPoint[*StepEndInput, StepEndDecision, StepEndOutcome](PointStepEnd,
	func(*StepEndInput) StepEndOutcome { return StepEndOutcome{} },
	func(out *StepEndOutcome, _ *StepEndInput, name string, d StepEndDecision) bool {
		if s, ok := d.(*Stop); ok {
			return settle(&out.Stop, &out.Hook, s, name)
		}
		return true
	})

// PostToolInput tells that an executed tool call ended: exactly once per
// call whose body ran (or was replaced by a gate's substitute), with
// success or failure. Calls that were denied, unknown or invalid never
// ran and get no post notification.
type PostToolInput struct {
	Scope
	Call        llm.ToolCall
	Result      *tool.Result
	Failed      bool
	ErrorType   string // panic, error, result-error, cancelled, aborted; empty on success
	Message     string // the error's message, when Failed
	Duration    time.Duration
	Interrupted bool
}

func (in *PostToolInput) callID() llm.CallID { return in.Call.ID }

// DispatchedInput tells how one tool call of the model was settled, once
// per call: Outcome is execute, gate-block, substitute, unknown,
// invalid-input or cancelled.
type DispatchedInput struct {
	Scope
	Call    llm.ToolCall
	Outcome string
}

func (in *DispatchedInput) callID() llm.CallID { return in.Call.ID }

// PostToolFunc is told that an executed call ended. It cannot change
// anything; its panic or error is reported by the agent and otherwise
// ignored.
type PostToolFunc func(ctx context.Context, in *PostToolInput) error

// DispatchedFunc is told how a call was settled. It cannot change
// anything; its panic or error is reported by the agent and otherwise
// ignored.
type DispatchedFunc func(ctx context.Context, in *DispatchedInput) error

// NoticeOutcome is the outcome of a notification: only its trail.
type NoticeOutcome struct{ Trail }

// PostTool is the post-tool-use notification.
var PostTool = NewNotice[*PostToolInput, Notice, NoticeOutcome](PointPostTool,
	func(*PostToolInput) NoticeOutcome { return NoticeOutcome{} })

// Dispatched is the dispatched-call notification.
var Dispatched = NewNotice[*DispatchedInput, Notice, NoticeOutcome](PointDispatched,
	func(*DispatchedInput) NoticeOutcome { return NoticeOutcome{} })
