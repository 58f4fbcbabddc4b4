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
// Set.Subset hands a subagent fewer tools; Set.Alias answers to a second
// name.
//
// The pipeline a host (the agent loop) runs per call is: look the tool up,
// validate the arguments, ask the approval Policy, Run the tool (which
// turns a returned error or a panic into "Tool error: <message>" and
// commits or discards the call's State), then Spill the result.
package tool
