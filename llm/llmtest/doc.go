// Package llmtest tests code that talks to a language model, without one.
//
// It has three parts:
//
//   - Model, a scripted llm.Model. Each request plays the next Entry of its
//     script: a text reply, tool calls, raw chunks, a failure before or
//     after the stream starts, a stream that hangs or is cut short.
//   - Server, a fake provider: an httptest server that plays the same
//     scripts over the real Anthropic Messages and OpenAI Chat Completions
//     wire formats (server-sent events, HTTP error statuses and bodies,
//     retry-after headers, dropped connections) and simulates the
//     providers' prompt caches. Point a provider adapter, or a whole
//     program, at Server.URL.
//   - RunModelTests, the conformance suite every llm.Model implementation
//     passes: chunk order, tool-call assembly, early release, cancellation,
//     terminal errors, provider error kinds through the wire.
//
// Quick start — script a model and stream from it:
//
//	m := llmtest.NewModel(
//		llmtest.CallTool("call_1", "read_file", `{"path":"go.mod"}`),
//		llmtest.Reply("The module is github.com/reinhq/rein."),
//	)
//	for chunk, err := range m.Stream(ctx, req) {
//		...
//	}
//	m.Requests() // what the model was sent, deep-copied
//
// A script that runs out yields an error wrapping ErrScriptExhausted that
// names the call and the request's last message; it never panics or hangs.
//
// Failures are scripted with the llm.ProviderError a real adapter would
// return:
//
//	llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529, RetryAfter: time.Second})
//	llmtest.FailAfter(&llm.ProviderError{Kind: llm.ErrServer}, &llm.TextDelta{Text: "half an ans"})
//	llmtest.Cut(&llm.TextDelta{Text: "dropped mid-"})
//	llmtest.Hang() // until the caller's context is done
//
// See Server for testing an adapter or a program end to end over HTTP.
package llmtest
