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
// answer), ToolGate (edit arguments, deny, substitute a result, stop the
// turn; before validation), PreToolUse (the same, after validation; edits
// are validated again), Approval (allow, ask, deny), ToolError and
// UnknownTool (substitute the default result), ToolResult (rewrite),
// StepEnd (stop) and Finalize (nudge the model on, or stop). PostTool and
// Dispatched are notifications: told once per call, they decide nothing.
//
// A point is data, declared once: a PointDef names it and says how its
// handlers' decisions fold into an outcome. On registers a handler, Run
// dispatches a chain, and both are the same for every point; the Set
// methods (Prompt, ToolGate, …) are shorthands for On. A host can
// declare a point of its own the same way:
//
//	// Audit is asked before a deployment; a deny keeps it from running.
//	type AuditInput struct{ Target string }
//	type AuditOutcome struct {
//		Denied *hook.Deny
//		hook.Trail
//	}
//	var Audit = hook.NewPoint[*AuditInput, hook.GateDecision, AuditOutcome]("audit",
//		func(*AuditInput) AuditOutcome { return AuditOutcome{} },
//		func(out *AuditOutcome, _ *AuditInput, name string, d hook.GateDecision) bool {
//			if deny, ok := d.(*hook.Deny); ok {
//				out.Denied, out.Hook = deny, name
//				return false // a deny ends the chain
//			}
//			return true
//		})
//
//	hs := hook.On(new(hook.Set), Audit, "no-friday", noFriday)
//	out, err := Audit.Run(ctx, hook.Join(hs), &AuditInput{Target: "prod"})
//
// Handlers are registered on a Set. The agent joins its own Set with the
// Set of one run (and its built-in guards) into a Chain: agent-level
// handlers run first, then run-level ones. Within a chain an edit is the
// input of the next handler and a deny ends the chain. Every decision
// that is not "continue" is recorded on the chain's Trail and, in the
// agent, written as a hook.decision event as it is taken. A handler that
// returns an error or panics fails the boundary closed with a *Error
// naming it. While a chain runs, its point is marked on the context, so a
// hook's own calls into the agent run without that chain (no recursion).
//
// A Set also carries middleware for the agent's seams: WrapModel wraps
// every model request of a run (llm.Middleware), WrapTool every tool
// (tool.Middleware); the first listed is outermost, the agent's set
// outside the run's.
//
// Observers only watch: they subscribe to event types on a Bus, receive
// events in order on their own goroutine through a bounded buffer, and can
// neither block nor break the loop. A panicking observer is recovered and
// counted; a slow one loses events, which are counted too. Transient
// events — stream deltas, tool progress, compaction progress — reach the
// observers of their exact type.
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
