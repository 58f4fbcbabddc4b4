// Package telemetry turns an agent's session events into OpenTelemetry
// traces and metrics that follow the GenAI semantic conventions, version
// 1.40.0 (go.opentelemetry.io/otel/semconv/v1.40.0).
//
// An Observer subscribes to the event bus of an agent (hook.Set.Observe),
// so it never slows the loop: it sees each event after the fact, on its own
// goroutine, and dates every span and span event with the event's Time.
// It emits, per run, an "invoke_agent" span; under it a "chat {model}"
// span per model request (from step.start to assistant.message, with
// retries and fallbacks as span events) and an "execute_tool {name}" span
// per tool call (tool.call to tool.result); compactions and hook
// decisions are span events, and so are typed decisions (agent.Decide,
// "rein.decision") on the span of the tool call that asked them. A
// subagent's run is a child span of its parent's run. It records the
// metrics gen_ai.client.token.usage ({token}),
// gen_ai.client.operation.duration (s) and
// gen_ai.client.operation.time_to_first_chunk (s), and puts
// gen_ai.response.time_to_first_chunk on each chat span — the two names
// the conventions added after 1.40.0 (in 1.41.0) for a client's streams.
//
// Two things the loop tells it as they happen, through middleware that
// Register adds: when each response's first chunk arrives, and — for
// each call of an MCP server's tool — the context of its execute_tool
// span, which the call runs under (it waits at most 50ms for the observer
// to reach the call). An MCP client (package mcp, given the same TracerProvider)
// starts its "tools/call {tool}" client spans under it, following the
// MCP conventions, and sends the trace context to the server in
// params._meta and the HTTP traceparent header. TraceParent gives hook
// programs the same context (TRACEPARENT).
//
// Content — system instructions, prompts, tool arguments and results,
// response text and reasoning — is not captured unless
// Options.CaptureContent is set, and then every piece passes through the
// matching function of Options.Redact before it is put on a span.
//
// Quick start:
//
//	obs := telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp})
//	a, err := agent.New(&agent.Options{Model: m, Hooks: obs.Register(nil)})
//	...
//	a.Close() // delivers the last events
//	obs.Close()
//	tp.Shutdown(ctx)
//
// The package builds on hook, session and llm; none of them, nor agent,
// imports it.
package telemetry
