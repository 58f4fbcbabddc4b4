// Package hook defines rein's interception points and observer
// subscriptions.
//
// An interception point is a named place in the agent loop where code may
// change what happens next: edit or deny a prompt, replace a model request,
// gate a tool call, substitute or rewrite a result, veto the end of a turn.
// Handlers are typed functions; each point has its own input type and its
// own closed set of decisions. A nil decision means "continue".
//
// The points, in the order a turn meets them: Prompt (edit, deny),
// Request (replace the request, rewrite its messages, stop with an
// answer), ToolGate (edit arguments, deny, substitute a result; before
// validation), PreToolUse (the same, after validation; edits are
// validated again), Approval (allow, ask, deny), ToolError and
// UnknownTool (substitute the default result), ToolResult (rewrite),
// StepEnd (stop) and Finalize (nudge the model on, or stop). PostTool and
// Dispatched are notifications: told once per call, they decide nothing.
//
// Handlers are registered on a Set. The agent joins its own Set with the
// Set of one run into a Chain: agent-level handlers run first, then
// run-level ones. Within a chain an edit is the input of the next handler
// and a deny ends the chain. A handler that returns an error or panics
// fails the boundary closed with a *Error naming it. While a chain runs,
// its point is marked on the context, so a hook's own calls into the agent
// run without that chain (no recursion).
//
// Observers only watch: they subscribe to event types on a Bus, receive
// events in order on their own goroutine through a bounded buffer, and can
// neither block nor break the loop. A panicking observer is recovered and
// counted; a slow one loses events, which are counted too.
//
// Quick start:
//
//	hs := new(hook.Set)
//	hs.ToolGate("no-rm", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
//		if in.Call.Name == "shell" && strings.Contains(string(in.Call.Args), "rm -rf") {
//			return &hook.Deny{Reason: "destructive command"}, nil
//		}
//		return nil, nil // continue
//	})
//	hs.Observe("printer", "tool.result", func(ev session.Event) { fmt.Println(ev.Seq) })
//	a, err := agent.New(&agent.Options{Model: m, Hooks: hs})
package hook
