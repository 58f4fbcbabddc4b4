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
// decisions are span events. It records the metrics
// gen_ai.client.token.usage ({token}) and gen_ai.client.operation.duration
// (s).
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
