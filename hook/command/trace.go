package command

import "slices"

// traceEnv is the extra environment of c's commands with TRACEPARENT set
// to the trace context of c's scope, when Options.TraceParent knows it.
// It comes after rein's own environment, so it wins over a TRACEPARENT
// rein was started with.
func (r *Runner) traceEnv(c *call) []string {
	if r.opts.TraceParent == nil {
		return c.env
	}
	tp := r.opts.TraceParent(c.scope, c.id)
	if tp == "" {
		return c.env
	}
	return append(slices.Clip(c.env), "TRACEPARENT="+tp)
}
