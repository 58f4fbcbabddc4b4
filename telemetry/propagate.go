package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// callKey names one tool call across the observer's runs: tool calls
// know their session and id, not their run.
type callKey struct {
	session session.ID
	call    llm.CallID
}

// spanWait bounds how long a tool waits for its execute_tool span. The
// loop publishes a call's tool.call event before it runs the call, so the
// observer is at most a few events behind; the bound only matters when
// the event was lost (a full buffer), and then the call runs without a
// trace context.
const spanWait = 50 * time.Millisecond

// traceTools is tool middleware: a call of an MCP server's tool runs
// with the context of its execute_tool span, so the server — told it in
// the request's _meta and headers — joins the run's trace. Other tools
// are left as they are: the call would wait for the observer to reach
// its tool.call, which ties the step to the observer's goroutine, while
// an MCP call crosses to another process, where the context is what
// links the two sides, and costs a round trip anyway.
func (o *Observer) traceTools(next tool.Tool) tool.Tool {
	if tool.OriginOf(next) != tool.OriginMCP {
		return next
	}
	return &tracedTool{Tool: next, o: o}
}

type tracedTool struct {
	tool.Tool
	o *Observer
}

// Unwrap returns the traced tool.
func (t *tracedTool) Unwrap() tool.Tool { return t.Tool }

// Call runs the tool under its call's span context.
func (t *tracedTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	if sc, ok := t.o.awaitCall(callKey{session.ID(call.Session), call.ID}); ok {
		ctx = trace.ContextWithSpanContext(ctx, sc)
	}
	return t.Tool.Call(ctx, call)
}

// awaitCall returns the span context of a call's execute_tool span,
// waiting at most spanWait for the observer to reach its tool.call.
func (o *Observer) awaitCall(k callKey) (trace.SpanContext, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if sc, ok := o.calls[k]; ok {
		return sc, true
	}
	timedOut := false
	t := time.AfterFunc(spanWait, func() {
		o.mu.Lock()
		timedOut = true
		o.seen.Broadcast()
		o.mu.Unlock()
	})
	defer t.Stop()
	for {
		o.seen.Wait()
		if sc, ok := o.calls[k]; ok {
			return sc, true
		}
		if timedOut {
			return trace.SpanContext{}, false
		}
	}
}

// TraceParent returns the W3C traceparent of the innermost span known for
// a hook's scope — the execute_tool span of call when it has started,
// else the run's span — or "" when the observer has seen neither yet (a
// prompt hook of a run whose start is not yet published). It never waits.
// Hook programs get it as TRACEPARENT (see hook/command.Options).
func (o *Observer) TraceParent(s hook.Scope, call llm.CallID) string {
	o.mu.Lock()
	sc, ok := o.calls[callKey{s.Session, call}]
	if !ok && s.Run != "" {
		if r := o.runs[s.Run]; r != nil {
			sc, ok = r.span.SpanContext(), true
		}
	}
	o.mu.Unlock()
	if !ok || !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier["traceparent"]
}
