// Package openai adapts OpenAI's two model APIs, and the many servers that
// copy the first, to rein's llm.Model:
//
//   - Chat is Chat Completions (POST /chat/completions), spoken by OpenAI
//     and by Ollama, vLLM, llama.cpp, DeepSeek, OpenRouter and any other
//     OpenAI-compatible server.
//   - Responses is OpenAI's Responses API (POST /responses), the one that
//     returns reasoning summaries and encrypted reasoning for replay.
//
// Quick start:
//
//	m, err := openai.NewChat(nil) // OpenAI, key from $OPENAI_API_KEY
//	if err != nil {
//		log.Fatal(err) // names the variable to set
//	}
//	req := &llm.Request{Model: "gpt-5", Messages: []llm.Message{llm.UserText("Hello")}}
//	var a llm.Assembler
//	for c, err := range m.Stream(ctx, req) {
//		if err != nil {
//			log.Fatal(err) // a *llm.ProviderError, or ctx's error
//		}
//		a.Add(c)
//	}
//	fmt.Println(a.Message().Text())
//
// A local or third-party server starts from a preset:
//
//	o, _ := openai.Preset(openai.ProviderOllama) // http://localhost:11434/v1, no key
//	m, err := openai.NewChat(&o)
//
// Presets: openai ($OPENAI_API_KEY, base $OPENAI_BASE_URL or
// https://api.openai.com/v1), ollama, vllm ($VLLM_API_KEY if set),
// llama.cpp ($LLAMA_API_KEY if set), deepseek ($DEEPSEEK_API_KEY),
// openrouter ($OPENROUTER_API_KEY) and openai-compatible (BaseURL
// required, key optional). Only the named provider's variable is read:
// an OpenAI key in the environment is never sent to another server.
//
// # Transport and decoding
//
// Requests go through the official SDK (github.com/openai/openai-go/v3)
// with its retries off, since the agent loop owns retry policy. Bodies are
// built incrementally: each message's wire items are encoded once and
// kept, and a request sends the kept items as they are plus the new ones
// (a message counts as unchanged while its Parts slice is the same one).
// A model keeps them for each conversation it serves, told apart by the
// first message, so conversations sharing one model (a server's sessions,
// subagents side by side) do not undo each other's. The SDK's
// typed stream accumulator is not used: rein decodes the server-sent
// events itself on top of the SDK's transport, because compatible servers
// differ from OpenAI in ways a strict decoder rejects, and because the
// hot path should allocate little. Tolerated: tool calls without ids
// (the Assembler names them), without an index, or all at index 0; a
// whole call in one chunk; arguments sent as an object; content sent as
// an array of parts; reasoning as "reasoning_content" or "reasoning";
// usage in the last choice, in every chunk as null, or missing; empty
// choices; no "data: [DONE]" after the finish; CRLF lines and comments;
// error objects in the stream.
//
// Chunks follow the llm protocol: each block opens with BlockStart and
// closes with BlockEnd, usage comes just before Finish, and Finish carries
// Provenance{Provider, Model} with the model the server names. Usage is
// normalised so that llm.Usage.Input excludes cached tokens (OpenAI's
// prompt_tokens include them): Input = prompt − cached, CacheRead =
// cached, Reasoning = reasoning tokens (part of Output).
//
// # Reasoning replay
//
// Responses requests are stateless ("store": false). For reasoning models
// (or when Request.Reasoning is set) the request includes
// "reasoning.encrypted_content"; each reasoning item then comes back as an
// llm.Reasoning whose Signature is the item id ("rs_…") and whose Redacted
// is the encrypted content, and it is sent back in order the next time —
// only to the same provider, and only when the encrypted content is
// present. Provenance.State holds {"response_id": …}. Chat models that
// stream reasoning_content get it back as reasoning_content when
// Compat.SendReasoning is set (llama.cpp and DeepSeek presets).
//
// # Request mapping and ignored fields
//
// System sections are joined with blank lines into one system message
// (Chat; "developer" with Compat.DeveloperRole) or into "instructions"
// (Responses). Tool results become "tool" messages or
// function_call_output items, in order, ahead of the rest of their user
// message; OpenAI has no error flag, so a failed result's text is
// prefixed "Error: ". Pictures a tool returned follow in a user message.
// Images are sent by URL or as data URLs. Plain-text documents (text/*,
// JSON) are sent as text; others inline as files (PDF), or by URL through
// Responses only. A server that answers "stream": true with one JSON
// chat.completion is read the same way as a stream. Tools are functions with their JSON
// Schema, strict only with Options.StrictTools. Tool choice maps to
// auto (the default, not sent), required, none or a named function;
// parallel_tool_calls is sent only with tools.
//
// Chat ignores Reasoning.BudgetTokens and Reasoning.Summary, sends TopK
// only with Compat.TopK, and MaxTokens as max_completion_tokens (OpenAI)
// or max_tokens (Compat.MaxTokensField, the compatible presets).
// Responses ignores TopK, Stop, Seed, PresencePenalty, FrequencyPenalty,
// Reasoning.BudgetTokens and Options.Compat. Both ignore cache hints: OpenAI caches
// prompt prefixes automatically.
//
// # Errors
//
// Failures are *llm.ProviderError: 429 with insufficient_quota (or a
// quota message, or 402) is ErrQuota and never retryable; other 429s are
// rate-limited; 500, 502, 504, 408 and 409 are server errors, and a 503
// that says "overloaded" is overloaded; 401 and 403 are auth;
// context_length_exceeded and the context messages of vLLM, llama.cpp and
// Ollama are context-too-long; other 4xx are invalid. Errors that arrive
// after HTTP 200 are classified by their code, type and message; a stream
// cut short is a transport error. retry-after-ms, retry-after and
// x-request-id are read. When ctx ends the stream, the error is ctx's own.
// The API key never appears in an error.
package openai
