package hook

import (
	"context"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Set holds handlers, observer subscriptions and seam middleware.
// Register everything before handing the Set to an agent or a run; a Set
// is read-only, and so safe for concurrent use, from then on. The zero
// value is an empty Set.
type Set struct {
	by        map[uint64][]entry
	mask      uint64 // the points with handlers
	observers []Subscription
	models    []llm.Middleware
	tools     []tool.Middleware
}

// Prompt registers a prompt-submit handler.
func (s *Set) Prompt(name string, f PromptFunc) *Set { return On(s, Prompt, name, f) }

// Request registers a before-request handler.
func (s *Set) Request(name string, f RequestFunc) *Set { return On(s, Request, name, f) }

// ToolGate registers a tool gate handler. It runs once per call, before
// the unknown-tool check and validation, so an edit of the arguments is
// validated like the model's own.
func (s *Set) ToolGate(name string, f GateFunc) *Set { return On(s, ToolGate, name, f) }

// PreToolUse registers a pre-tool-use handler. It runs after the
// arguments were validated (and coerced); edited arguments are validated
// again, and rejected like the model's own when they break the schema.
// Decisions are those of a gate.
func (s *Set) PreToolUse(name string, f GateFunc) *Set { return On(s, PreToolUse, name, f) }

// Approval registers an approval handler.
func (s *Set) Approval(name string, f ApprovalFunc) *Set { return On(s, Approval, name, f) }

// ToolResult registers a tool-result handler.
func (s *Set) ToolResult(name string, f ToolResultFunc) *Set { return On(s, ToolResult, name, f) }

// ToolError registers a tool-error handler.
func (s *Set) ToolError(name string, f ToolErrorFunc) *Set { return On(s, ToolError, name, f) }

// UnknownTool registers an unknown-tool handler.
func (s *Set) UnknownTool(name string, f UnknownToolFunc) *Set { return On(s, UnknownTool, name, f) }

// Finalize registers a finalize handler.
func (s *Set) Finalize(name string, f FinalizeFunc) *Set { return On(s, Finalize, name, f) }

// StepEnd registers a step-end handler.
func (s *Set) StepEnd(name string, f StepEndFunc) *Set { return On(s, StepEnd, name, f) }

// PostTool registers a post-tool-use notification.
func (s *Set) PostTool(name string, f PostToolFunc) *Set {
	return On(s, PostTool, name, func(ctx context.Context, in *PostToolInput) (Notice, error) { return nil, f(ctx, in) })
}

// Dispatched registers a dispatched-call notification.
func (s *Set) Dispatched(name string, f DispatchedFunc) *Set {
	return On(s, Dispatched, name, func(ctx context.Context, in *DispatchedInput) (Notice, error) { return nil, f(ctx, in) })
}

// WrapModel adds model middleware: every model request of a run that
// has s goes through it. Middleware of the agent's set is outside that of
// a run's; within a set the first added is outermost.
func (s *Set) WrapModel(mw llm.Middleware) *Set {
	s.models = append(s.models, mw)
	return s
}

// WrapTool adds tool middleware, applied to every tool a run offers, in
// the order of WrapModel.
func (s *Set) WrapTool(mw tool.Middleware) *Set {
	s.tools = append(s.tools, mw)
	return s
}

// Observe subscribes fn to events of eventType ("*" for every logged
// event). The agent delivers them through its Bus. Transient events —
// stream deltas, tool progress, compaction progress, with Seq 0 and never
// logged — go to observers of their exact type only.
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

// ModelMiddleware returns the model middleware of the chain's sets, the
// outermost first.
func (c Chain) ModelMiddleware() []llm.Middleware {
	return gather(c, func(s *Set) []llm.Middleware { return s.models })
}

// ToolMiddleware returns the tool middleware of the chain's sets, the
// outermost first.
func (c Chain) ToolMiddleware() []tool.Middleware {
	return gather(c, func(s *Set) []tool.Middleware { return s.tools })
}

func gather[T any](c Chain, of func(*Set) []T) []T {
	var out []T
	for _, s := range c.sets {
		if s != nil {
			out = append(out, of(s)...)
		}
	}
	return out
}

// Record is one non-continue decision, for a hook.decision event.
type Record struct {
	Point    Point
	Hook     string
	Decision string
	Reason   string
	CallID   llm.CallID `json:",omitempty"` // the tool call decided on, if any
}

// Event returns the record as a session payload.
func (r Record) Event() *session.HookDecision {
	return &session.HookDecision{Point: string(r.Point), Hook: r.Hook, Decision: r.Decision, Reason: r.Reason, CallID: r.CallID}
}
