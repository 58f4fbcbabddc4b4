// Package tool is the seam between a model and the things it can do, and
// the machinery around every call: typed tools derived from Go structs,
// argument validation that repairs the model's harmless mistakes, ordered
// tool sets, approval policy, durable per-tool state, spilling of large
// results and dry-run wrappers.
//
// Quick start — a typed tool, offered to a model through a Set:
//
//	type weatherArgs struct {
//		City  string `json:"city" jsonschema:"the city to report on"`
//		Units string `json:"units,omitempty" enum:"metric|imperial" default:"metric"`
//	}
//
//	weather, err := tool.New("weather", "Reports the weather in a city.",
//		func(ctx context.Context, in weatherArgs, call *tool.Call) (*tool.Result, error) {
//			return tool.Text("sunny in " + in.City), nil
//		}, &tool.Options{Annotations: &tool.Annotations{ReadOnly: true, OpenWorld: true}})
//	set, err := tool.NewSet(weather)
//	req.Tools = set.Specs()                     // what the model is offered
//	t, ok := set.Lookup(call.Name)              // the model asked for a call
//	v, err := set.Validator(call.Name)
//	args, coerced, err := v.Validate(call.Args) // "Validation error: …" goes back to the model
//	res, err := tool.Run(ctx, t, &tool.Call{ID: call.ID, Name: call.Name, Args: args})
//	res, err = tool.Spill(res, 32<<10, spillDir) // keep huge outputs out of the context
//
// Wrappers change how a tool runs without touching it: DryRun (and
// DryRunSet) keep tools from changing anything, WithTimeout bounds a call.
// A Middleware is any such func(Tool) Tool; Wrap(t, a, b) applies
// middlewares with the first listed outermost (a sees the call first),
// and WrapSet does so for every tool of a Set. Set.Subset hands a
// subagent fewer tools; Set.Alias answers to a second name.
//
// A tool declares what a host may need to know of it through optional
// interfaces: Validated (its compiled argument validator), Originer
// (where it comes from: OriginNative, OriginMCP, OriginProvider),
// Subjecter (the command line or path a call acts on, for approval;
// Func declares one with SubjectFn, such as PathSubject or
// CommandSubject) and io.Closer (resources to release). Every wrapper is
// a Wrapper with Unwrap, and As finds an optional interface anywhere in a
// chain of wrappers, as errors.As does for errors, so wrappers forward
// nothing by hand:
//
//	if c, ok := tool.As[io.Closer](t); ok { c.Close() }
//	origin := tool.OriginOf(t)          // "native" when undeclared
//	subj := tool.SubjectOf(t, args)     // zero when undeclared; never guessed
//
// The pipeline a host (the agent loop) runs per call is: look the tool up,
// validate the arguments, ask the approval Policy (with the call's
// SubjectOf), Run the tool, then Spill the result. Run is the one call
// path: it turns a returned error or a panic into "Tool error: <message>"
// and keeps the error for the host (ErrorOf: errors.Is sees a
// cancellation through it, errors.As a *PanicError with its stack), and
// commits or discards the call's State.
package tool
