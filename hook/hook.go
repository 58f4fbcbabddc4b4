package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Point names an interception point.
type Point string

// The interception points, in the order a turn meets them.
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

// RequestInput is the input of a before-request handler. Request is shared
// with the loop and valid only during the call: a handler must not modify
// or keep it, and returns a *ReplaceRequest or *RewriteMessages instead.
type RequestInput struct {
	Scope
	Request *llm.Request
}

// ToolInput is the input of a tool gate or approval handler.
type ToolInput struct {
	Scope
	Call llm.ToolCall
	// Spec is the tool's spec, or nil when the model named an unknown tool.
	Spec *tool.Spec
	// Validated reports whether Call.Args passed validation: true at the
	// approval point, false at the gate, which runs first.
	Validated bool
}

// ToolResultInput is the input of a tool-result handler.
type ToolResultInput struct {
	Scope
	Call     llm.ToolCall
	Result   *tool.Result
	Outcome  string // execute, gate-block, substitute, …
	Duration time.Duration
}

// ToolErrorInput is the input of a tool-error handler.
type ToolErrorInput struct {
	Scope
	Call llm.ToolCall
	Err  error
}

// UnknownToolInput is the input of an unknown-tool handler.
type UnknownToolInput struct {
	Scope
	Call llm.ToolCall
}

// FinalizeInput is the input of a finalize handler: the model answered
// without asking for a tool.
type FinalizeInput struct {
	Scope
	Message *llm.Message
}

// StepEndInput is the input of a step-end handler.
type StepEndInput struct {
	Scope
	Message *llm.Message // the step's assistant message
	Usage   llm.Usage
	Finish  llm.FinishReason
}

// PromptFunc handles a prompt submit: continue (nil), *EditPrompt or *Deny.
type PromptFunc func(ctx context.Context, in *PromptInput) (PromptDecision, error)

// RequestFunc handles the point before a model request: continue (nil),
// *ReplaceRequest, *RewriteMessages or *Stop.
type RequestFunc func(ctx context.Context, in *RequestInput) (RequestDecision, error)

// GateFunc handles a tool gate or pre-tool-use point: continue (nil),
// *EditArgs, *Deny or *Substitute.
type GateFunc func(ctx context.Context, in *ToolInput) (GateDecision, error)

// ApprovalFunc handles approval: no opinion (nil), *Allow, *Ask or *Deny.
type ApprovalFunc func(ctx context.Context, in *ToolInput) (ApprovalDecision, error)

// ToolResultFunc handles a tool's result: keep it (nil) or *RewriteResult.
type ToolResultFunc func(ctx context.Context, in *ToolResultInput) (ResultDecision, error)

// ToolErrorFunc handles a tool's failure: the default "Tool error: …"
// result (nil) or *Substitute.
type ToolErrorFunc func(ctx context.Context, in *ToolErrorInput) (SubstituteDecision, error)

// UnknownToolFunc handles a call of a tool that does not exist: the
// default "Unknown tool: …" result (nil) or *Substitute.
type UnknownToolFunc func(ctx context.Context, in *UnknownToolInput) (SubstituteDecision, error)

// FinalizeFunc handles a final answer: end the turn (nil or *Stop) or
// continue it with a *Nudge.
type FinalizeFunc func(ctx context.Context, in *FinalizeInput) (FinalizeDecision, error)

// StepEndFunc handles the end of a step: go on (nil) or *Stop.
type StepEndFunc func(ctx context.Context, in *StepEndInput) (StepEndDecision, error)

// Error is a handler's failure: it returned an error or panicked. The
// boundary it guarded fails closed.
type Error struct {
	Point Point
	Hook  string
	Err   error
}

// Error names the point and the handler.
func (e *Error) Error() string {
	return fmt.Sprintf("hook %q at %s failed: %v; the %s boundary was failed closed", e.Hook, e.Point, e.Err, e.Point)
}

// Unwrap returns the handler's error.
func (e *Error) Unwrap() error { return e.Err }

// Record is one non-continue decision, for a hook.decision event.
type Record struct {
	Point    Point
	Hook     string
	Decision string
	Reason   string
}

// Event returns the record as a session payload.
func (r Record) Event(call llm.CallID) *session.HookDecision {
	return &session.HookDecision{Point: string(r.Point), Hook: r.Hook, Decision: r.Decision, Reason: r.Reason, CallID: call}
}

type entry[F any] struct {
	name string
	fn   F
}

// Set holds handlers and observer subscriptions. Register everything
// before handing the Set to an agent or a run; a Set is read-only, and so
// safe for concurrent use, from then on. The zero value is an empty Set.
type Set struct {
	prompt     []entry[PromptFunc]
	request    []entry[RequestFunc]
	gate       []entry[GateFunc]
	pre        []entry[GateFunc]
	approval   []entry[ApprovalFunc]
	result     []entry[ToolResultFunc]
	toolErr    []entry[ToolErrorFunc]
	unknown    []entry[UnknownToolFunc]
	finalize   []entry[FinalizeFunc]
	post       []entry[PostToolFunc]
	dispatched []entry[DispatchedFunc]
	stepEnd    []entry[StepEndFunc]
	observers  []Subscription
	mask       uint32 // the points with handlers
}

// Prompt registers a prompt-submit handler.
func (s *Set) Prompt(name string, f PromptFunc) *Set {
	s.prompt = append(s.prompt, entry[PromptFunc]{name, f})
	s.mask |= pointBit(PointPrompt)
	return s
}

// Request registers a before-request handler.
func (s *Set) Request(name string, f RequestFunc) *Set {
	s.request = append(s.request, entry[RequestFunc]{name, f})
	s.mask |= pointBit(PointRequest)
	return s
}

// ToolGate registers a tool gate (pre-tool-use) handler. It runs once per
// call, before the unknown-tool check and validation, so an edit of the
// arguments is validated like the model's own.
func (s *Set) ToolGate(name string, f GateFunc) *Set {
	s.gate = append(s.gate, entry[GateFunc]{name, f})
	s.mask |= pointBit(PointToolGate)
	return s
}

// PreToolUse registers a pre-tool-use handler. It runs after the
// arguments were validated (and coerced); edited arguments are validated
// again, and rejected like the model's own when they break the schema.
// Decisions are those of a gate.
func (s *Set) PreToolUse(name string, f GateFunc) *Set {
	s.pre = append(s.pre, entry[GateFunc]{name, f})
	s.mask |= pointBit(PointPreToolUse)
	return s
}

// Approval registers an approval handler.
func (s *Set) Approval(name string, f ApprovalFunc) *Set {
	s.approval = append(s.approval, entry[ApprovalFunc]{name, f})
	s.mask |= pointBit(PointApproval)
	return s
}

// ToolResult registers a tool-result handler.
func (s *Set) ToolResult(name string, f ToolResultFunc) *Set {
	s.result = append(s.result, entry[ToolResultFunc]{name, f})
	s.mask |= pointBit(PointToolResult)
	return s
}

// ToolError registers a tool-error handler.
func (s *Set) ToolError(name string, f ToolErrorFunc) *Set {
	s.toolErr = append(s.toolErr, entry[ToolErrorFunc]{name, f})
	s.mask |= pointBit(PointToolError)
	return s
}

// UnknownTool registers an unknown-tool handler.
func (s *Set) UnknownTool(name string, f UnknownToolFunc) *Set {
	s.unknown = append(s.unknown, entry[UnknownToolFunc]{name, f})
	s.mask |= pointBit(PointUnknownTool)
	return s
}

// Finalize registers a finalize handler.
func (s *Set) Finalize(name string, f FinalizeFunc) *Set {
	s.finalize = append(s.finalize, entry[FinalizeFunc]{name, f})
	s.mask |= pointBit(PointFinalize)
	return s
}

// StepEnd registers a step-end handler.
func (s *Set) StepEnd(name string, f StepEndFunc) *Set {
	s.stepEnd = append(s.stepEnd, entry[StepEndFunc]{name, f})
	s.mask |= pointBit(PointStepEnd)
	return s
}

// Observe subscribes fn to events of eventType ("*" for every logged
// event). The agent delivers them through its Bus. Transient stream
// deltas — assistant.chunk events with Seq 0, never logged — go to
// observers of "assistant.chunk" only.
func (s *Set) Observe(name, eventType string, fn Observer) *Set {
	s.observers = append(s.observers, Subscription{Name: name, Type: eventType, Fn: fn})
	return s
}

// Observers returns the Set's observer subscriptions.
func (s *Set) Observers() []Subscription {
	if s == nil {
		return nil
	}
	return s.observers
}

// Chain is the agent-level Set followed by a run-level Set. The zero
// Chain has no handlers and dispatches for free.
type Chain struct {
	Agent *Set
	Run   *Set
}

// Join returns the chain of the agent's and a run's sets; either may be nil.
func Join(agentSet, runSet *Set) Chain { return Chain{agentSet, runSet} }

type activeKey struct{}

// active reports whether point p's chain is running on ctx.
func active(ctx context.Context, p Point) bool {
	v, _ := ctx.Value(activeKey{}).(*activePoints)
	for ; v != nil; v = v.parent {
		if v.p == p {
			return true
		}
	}
	return false
}

type activePoints struct {
	p      Point
	parent *activePoints
}

// Within reports whether ctx is inside a running chain of point p, that
// is, whether the code holding ctx was called by a handler of p.
func Within(ctx context.Context, p Point) bool { return active(ctx, p) }

func enter(ctx context.Context, p Point) context.Context {
	parent, _ := ctx.Value(activeKey{}).(*activePoints)
	return context.WithValue(ctx, activeKey{}, &activePoints{p, parent})
}

// handlers returns the entries of one point from both sets.
func handlers[F any](c Chain, get func(*Set) []entry[F]) (a, b []entry[F]) {
	if c.Agent != nil {
		a = get(c.Agent)
	}
	if c.Run != nil {
		b = get(c.Run)
	}
	return a, b
}

func call[I any, D Decision, F ~func(context.Context, I) (D, error)](ctx context.Context, p Point, e entry[F], in I) (d D, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Point: p, Hook: e.name, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	d, err = e.fn(ctx, in)
	if err != nil {
		err = &Error{Point: p, Hook: e.name, Err: err}
	}
	return d, err
}

// dispatch runs the handlers of one point; step is told each decision and
// returns false to end the chain.
func dispatch[I any, D Decision, F ~func(context.Context, I) (D, error)](ctx context.Context, p Point, a, b []entry[F], in I, step func(name string, d D) bool) error {
	if len(a)+len(b) == 0 || active(ctx, p) {
		return nil
	}
	ctx = enter(ctx, p)
	for _, list := range [2][]entry[F]{a, b} {
		for _, e := range list {
			d, err := call(ctx, p, e, in)
			if err != nil {
				return err
			}
			if isNil(d) {
				continue
			}
			if !step(e.name, d) {
				return nil
			}
		}
	}
	return nil
}

func isNil(d Decision) bool {
	if d == nil {
		return true
	}
	switch v := d.(type) {
	case *Deny:
		return v == nil
	case *EditPrompt:
		return v == nil
	case *EditArgs:
		return v == nil
	case *Substitute:
		return v == nil
	case *ReplaceRequest:
		return v == nil
	case *RewriteMessages:
		return v == nil
	case *Stop:
		return v == nil
	case *RewriteResult:
		return v == nil
	case *Nudge:
		return v == nil
	case *Allow:
		return v == nil
	case *Ask:
		return v == nil
	}
	return false
}

func reasonOf(d Decision) string {
	switch v := d.(type) {
	case *Deny:
		return v.Reason
	case *Substitute:
		return v.Reason
	case *Stop:
		return v.Reason
	case *Allow:
		return v.Reason
	case *Ask:
		return v.Reason
	}
	return ""
}

func record(p Point, name string, d Decision) Record {
	return Record{Point: p, Hook: name, Decision: d.Kind(), Reason: reasonOf(d)}
}

// Has reports whether the chain has any handler for p. It is cheap
// enough to call before building a point's input.
func (c Chain) Has(p Point) bool {
	var m uint32
	if c.Agent != nil {
		m = c.Agent.mask
	}
	if c.Run != nil {
		m |= c.Run.mask
	}
	return m&pointBit(p) != 0
}

func pointBit(p Point) uint32 {
	switch p {
	case PointPrompt:
		return 1 << 0
	case PointRequest:
		return 1 << 1
	case PointToolGate:
		return 1 << 2
	case PointPreToolUse:
		return 1 << 3
	case PointApproval:
		return 1 << 4
	case PointToolResult:
		return 1 << 5
	case PointToolError:
		return 1 << 6
	case PointUnknownTool:
		return 1 << 7
	case PointFinalize:
		return 1 << 8
	case PointStepEnd:
		return 1 << 9
	case PointPostTool:
		return 1 << 10
	case PointDispatched:
		return 1 << 11
	}
	return 0
}

// PromptOutcome is the result of the prompt-submit chain.
type PromptOutcome struct {
	Parts   []llm.Part // the prompt after edits
	Denied  *Deny      // non-nil when a handler denied it
	Hook    string     // the handler that denied
	Records []Record
}

// Prompt runs the prompt-submit chain.
func (c Chain) Prompt(ctx context.Context, in *PromptInput) (PromptOutcome, error) {
	out := PromptOutcome{Parts: in.Parts}
	if !c.Has(PointPrompt) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[PromptFunc] { return s.prompt })
	err := dispatch(ctx, PointPrompt, a, b, in, func(name string, d PromptDecision) bool {
		out.Records = append(out.Records, record(PointPrompt, name, d))
		switch d := d.(type) {
		case *EditPrompt:
			in.Parts = d.Parts
			out.Parts = d.Parts
		case *Deny:
			out.Denied, out.Hook = d, name
			return false
		}
		return true
	})
	return out, err
}

// RequestOutcome is the result of the before-request chain.
type RequestOutcome struct {
	Request *llm.Request // the request to send (the input's unless replaced or rewritten)
	Stop    *Stop        // non-nil when a handler stopped the turn
	Hook    string       // the handler that stopped it
	Records []Record
}

// Request runs the before-request chain. A rewrite copies the request, so
// the input's message slice is never modified.
func (c Chain) Request(ctx context.Context, in *RequestInput) (RequestOutcome, error) {
	out := RequestOutcome{Request: in.Request}
	if !c.Has(PointRequest) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[RequestFunc] { return s.request })
	err := dispatch(ctx, PointRequest, a, b, in, func(name string, d RequestDecision) bool {
		out.Records = append(out.Records, record(PointRequest, name, d))
		switch d := d.(type) {
		case *ReplaceRequest:
			if d.Request != nil {
				in.Request = d.Request
				out.Request = d.Request
			}
		case *RewriteMessages:
			r := *in.Request
			r.Messages = d.Messages
			in.Request = &r
			out.Request = &r
		case *Stop:
			out.Stop, out.Hook = d, name
			return false
		}
		return true
	})
	return out, err
}

// GateOutcome is the result of the tool gate chain.
type GateOutcome struct {
	Args       json.RawMessage // the arguments after edits; nil when unchanged
	Denied     *Deny
	Substitute *Substitute
	Hook       string // the handler that denied or substituted
	Records    []Record
}

// Gate runs the tool gate chain. An edit feeds the next handler; a deny
// ends the chain and wins over a substitute from an earlier handler.
func (c Chain) Gate(ctx context.Context, in *ToolInput) (GateOutcome, error) {
	if !c.Has(PointToolGate) {
		return GateOutcome{}, nil
	}
	a, b := handlers(c, func(s *Set) []entry[GateFunc] { return s.gate })
	return gate(ctx, PointToolGate, a, b, in)
}

// PreToolUse runs the pre-tool-use chain, with the rules of Gate.
func (c Chain) PreToolUse(ctx context.Context, in *ToolInput) (GateOutcome, error) {
	if !c.Has(PointPreToolUse) {
		return GateOutcome{}, nil
	}
	a, b := handlers(c, func(s *Set) []entry[GateFunc] { return s.pre })
	return gate(ctx, PointPreToolUse, a, b, in)
}

func gate(ctx context.Context, p Point, a, b []entry[GateFunc], in *ToolInput) (GateOutcome, error) {
	var out GateOutcome
	err := dispatch(ctx, p, a, b, in, func(name string, d GateDecision) bool {
		out.Records = append(out.Records, record(p, name, d))
		switch d := d.(type) {
		case *EditArgs:
			in.Call.Args = d.Args
			out.Args = d.Args
		case *Deny:
			out.Denied, out.Hook, out.Substitute = d, name, nil
			return false
		case *Substitute:
			if out.Substitute == nil {
				out.Substitute, out.Hook = d, name
			}
		}
		return true
	})
	return out, err
}

// ApprovalOutcome is the result of the approval chain. With no decision
// from any handler, Decision is nil and the agent's approver decides.
type ApprovalOutcome struct {
	Decision ApprovalDecision
	Hook     string
	Records  []Record
}

// Approval runs the approval chain. A deny ends it; otherwise the
// strictest decision wins (ask over allow).
func (c Chain) Approval(ctx context.Context, in *ToolInput) (ApprovalOutcome, error) {
	var out ApprovalOutcome
	if !c.Has(PointApproval) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[ApprovalFunc] { return s.approval })
	err := dispatch(ctx, PointApproval, a, b, in, func(name string, d ApprovalDecision) bool {
		out.Records = append(out.Records, record(PointApproval, name, d))
		switch d.(type) {
		case *Deny:
			out.Decision, out.Hook = d, name
			return false
		case *Ask:
			out.Decision, out.Hook = d, name
		case *Allow:
			if out.Decision == nil {
				out.Decision, out.Hook = d, name
			}
		}
		return true
	})
	return out, err
}

// ResultOutcome is the result of the tool-result chain.
type ResultOutcome struct {
	Result  *tool.Result
	Records []Record
}

// ToolResult runs the tool-result chain; each rewrite feeds the next handler.
func (c Chain) ToolResult(ctx context.Context, in *ToolResultInput) (ResultOutcome, error) {
	out := ResultOutcome{Result: in.Result}
	if !c.Has(PointToolResult) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[ToolResultFunc] { return s.result })
	err := dispatch(ctx, PointToolResult, a, b, in, func(name string, d ResultDecision) bool {
		out.Records = append(out.Records, record(PointToolResult, name, d))
		if d, ok := d.(*RewriteResult); ok && d.Result != nil {
			in.Result = d.Result
			out.Result = d.Result
		}
		return true
	})
	return out, err
}

// SubstituteOutcome is the result of the tool-error and unknown-tool chains.
type SubstituteOutcome struct {
	Substitute *Substitute // the first substitute; nil for the default result
	Hook       string
	Records    []Record
}

// ToolError runs the tool-error chain; the first substitute ends it.
func (c Chain) ToolError(ctx context.Context, in *ToolErrorInput) (SubstituteOutcome, error) {
	var out SubstituteOutcome
	if !c.Has(PointToolError) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[ToolErrorFunc] { return s.toolErr })
	err := dispatch(ctx, PointToolError, a, b, in, func(name string, d SubstituteDecision) bool {
		return out.take(PointToolError, name, d)
	})
	return out, err
}

// UnknownTool runs the unknown-tool chain; the first substitute ends it.
func (c Chain) UnknownTool(ctx context.Context, in *UnknownToolInput) (SubstituteOutcome, error) {
	var out SubstituteOutcome
	if !c.Has(PointUnknownTool) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[UnknownToolFunc] { return s.unknown })
	err := dispatch(ctx, PointUnknownTool, a, b, in, func(name string, d SubstituteDecision) bool {
		return out.take(PointUnknownTool, name, d)
	})
	return out, err
}

func (out *SubstituteOutcome) take(p Point, name string, d SubstituteDecision) bool {
	out.Records = append(out.Records, record(p, name, d))
	if s, ok := d.(*Substitute); ok && s.Result != nil {
		out.Substitute, out.Hook = s, name
		return false
	}
	return true
}

// FinalizeOutcome is the result of the finalize chain.
type FinalizeOutcome struct {
	Nudge   *Nudge // continue the turn with this message
	Stop    *Stop  // end the turn now, even if follow-ups are queued
	Hook    string
	Records []Record
}

// Finalize runs the finalize chain; the first nudge or stop ends it.
func (c Chain) Finalize(ctx context.Context, in *FinalizeInput) (FinalizeOutcome, error) {
	var out FinalizeOutcome
	if !c.Has(PointFinalize) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[FinalizeFunc] { return s.finalize })
	err := dispatch(ctx, PointFinalize, a, b, in, func(name string, d FinalizeDecision) bool {
		out.Records = append(out.Records, record(PointFinalize, name, d))
		switch d := d.(type) {
		case *Nudge:
			out.Nudge, out.Hook = d, name
		case *Stop:
			out.Stop, out.Hook = d, name
		}
		return false
	})
	return out, err
}

// StepEndOutcome is the result of the step-end chain.
type StepEndOutcome struct {
	Stop    *Stop
	Hook    string
	Records []Record
}

// StepEnd runs the step-end chain; the first stop ends it.
func (c Chain) StepEnd(ctx context.Context, in *StepEndInput) (StepEndOutcome, error) {
	var out StepEndOutcome
	if !c.Has(PointStepEnd) {
		return out, nil
	}
	a, b := handlers(c, func(s *Set) []entry[StepEndFunc] { return s.stepEnd })
	err := dispatch(ctx, PointStepEnd, a, b, in, func(name string, d StepEndDecision) bool {
		out.Records = append(out.Records, record(PointStepEnd, name, d))
		if s, ok := d.(*Stop); ok {
			out.Stop, out.Hook = s, name
			return false
		}
		return true
	})
	return out, err
}

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

// DispatchedInput tells how one tool call of the model was settled, once
// per call: Outcome is execute, gate-block, substitute, unknown,
// invalid-input or cancelled.
type DispatchedInput struct {
	Scope
	Call    llm.ToolCall
	Outcome string
}

// PostToolFunc is told that an executed call ended. It cannot change
// anything; its panic or error is reported by the agent and otherwise
// ignored.
type PostToolFunc func(ctx context.Context, in *PostToolInput) error

// DispatchedFunc is told how a call was settled. It cannot change
// anything; its panic or error is reported by the agent and otherwise
// ignored.
type DispatchedFunc func(ctx context.Context, in *DispatchedInput) error

// PostTool registers a post-tool-use notification.
func (s *Set) PostTool(name string, f PostToolFunc) *Set {
	s.post = append(s.post, entry[PostToolFunc]{name, f})
	s.mask |= pointBit(PointPostTool)
	return s
}

// Dispatched registers a dispatched-call notification.
func (s *Set) Dispatched(name string, f DispatchedFunc) *Set {
	s.dispatched = append(s.dispatched, entry[DispatchedFunc]{name, f})
	s.mask |= pointBit(PointDispatched)
	return s
}

// PostTool tells every post-tool-use handler; it returns the first
// handler failure as a *Error after telling all of them.
func (c Chain) PostTool(ctx context.Context, in *PostToolInput) error {
	a, b := handlers(c, func(s *Set) []entry[PostToolFunc] { return s.post })
	return notify(ctx, PointPostTool, a, b, in)
}

// Dispatched tells every dispatched-call handler; it returns the first
// handler failure as a *Error after telling all of them.
func (c Chain) Dispatched(ctx context.Context, in *DispatchedInput) error {
	a, b := handlers(c, func(s *Set) []entry[DispatchedFunc] { return s.dispatched })
	return notify(ctx, PointDispatched, a, b, in)
}

func notify[I any, F ~func(context.Context, I) error](ctx context.Context, p Point, a, b []entry[F], in I) (first error) {
	if len(a)+len(b) == 0 || active(ctx, p) {
		return nil
	}
	ctx = enter(ctx, p)
	for _, list := range [2][]entry[F]{a, b} {
		for _, e := range list {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				return e.fn(ctx, in)
			}()
			if err != nil && first == nil {
				first = &Error{Point: p, Hook: e.name, Err: err}
			}
		}
	}
	return first
}
