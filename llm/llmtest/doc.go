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
//     providers' prompt caches.
//   - RunModelTests, the conformance suite every llm.Model implementation
//     passes: chunk order, tool-call assembly, early release, cancellation,
//     terminal errors, provider error kinds through the wire.
//
// # Scripting a model
//
//	m := llmtest.NewModel(
//		llmtest.CallTool("call_1", "read_file", `{"path":"go.mod"}`),
//		llmtest.Reply("The module is github.com/reinhq/rein."),
//	)
//	a, _ := agent.New(&agent.Options{Model: m, ...})
//	...
//	m.Requests() // what the model was sent, deep-copied
//	m.Calls()    // how many requests
//
// Entries:
//
//	Reply(text)                     a text block, DefaultUsage, finish stop
//	CallTool(id, name, args)        one tool call, finish tool-calls
//	CallTools(calls...)             parallel tool calls
//	MalformedCall(id, name, raw)    a call whose arguments are not JSON
//	Chunks(chunks...)               anything else, chunk by chunk
//	Respond(func(req) Entry)        decided when the request arrives
//	Fail(err)                       an error before any chunk
//	FailAfter(err, chunks...)       an error after HTTP 200, mid-stream
//	Cut(chunks...)                  a stream dropped without a finish
//	Hang(), HangAfter(chunks...)    block until the caller's context ends
//	e.WithUsage(u), e.WithDelay(d)  refine any of them
//
// Script failures with the *llm.ProviderError a real adapter returns:
//
//	llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529, RetryAfter: time.Second})
//
// A script that runs out yields an error wrapping ErrScriptExhausted that
// names the call and the request's last message; it never panics or hangs.
//
// # Testing over HTTP
//
// NewServer serves a Model's script on a local URL, so a provider adapter,
// or a whole program such as the rein CLI, runs against it unchanged:
//
//	m := llmtest.NewModel(llmtest.Reply("Hi!"))
//	srv := llmtest.NewServer(t, m)
//	model := anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "test"})
//	// or an OpenAI adapter with BaseURL srv.URL + "/v1"
//
// The path picks the wire: …/v1/messages speaks Anthropic, …/chat/completions
// speaks OpenAI. Each request body is decoded into an *llm.Request, so
// Respond entries and m.Requests work the same as with the bare Model, and
// srv.Requests returns the raw bodies and headers to check what the
// adapter put on the wire. Fail becomes the provider's HTTP error (status,
// error JSON, retry-after), FailAfter the wire's mid-stream error event,
// Cut a connection closed mid-stream, Hang a response that never comes.
// See Server for the exact mapping.
//
// The server also simulates prompt caching. When an entry does not set its
// own usage, a request that shares a cached prefix with an earlier one
// reports cache reads and writes in the wire's usage fields, with 5-minute
// and 1-hour TTLs on an injectable clock (NewServerWithOptions), so an
// agent's cache-breakpoint placement can be tested for hits.
//
// # Checking a Model implementation
//
//	func TestConformance(t *testing.T) {
//		llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model {
//			return myadapter.New(llmtest.NewServer(t, m).URL)
//		})
//	}
package llmtest
