// Package anthropic is rein's adapter for the Anthropic Messages API: an
// llm.Model (and llm.TokenCounter) built on the official Go SDK with the
// SDK's own retries turned off, since retry policy belongs to the loop.
//
// Quick start:
//
//	m, err := anthropic.New(nil) // key from $ANTHROPIC_API_KEY
//	if err != nil {
//		return err
//	}
//	req := &llm.Request{
//		Model:    "claude-sonnet-4-5",
//		Messages: []llm.Message{llm.UserText("Hello")},
//		Cache:    &llm.CacheHint{}, // place cache breakpoints automatically
//	}
//	var a llm.Assembler
//	for chunk, err := range m.Stream(ctx, req) {
//		if err != nil {
//			return err // an *llm.ProviderError, or ctx's error
//		}
//		a.Add(chunk)
//	}
//	fmt.Println(a.Message().Text())
//
// # Request bodies
//
// A Model builds each request body incrementally: every message is
// encoded once into the API's wire form and kept, and a request is the
// kept messages plus the newest, its settled prefix sent as kept rather
// than copied. Cache breakpoints are placed anew for every request and
// written between the kept bytes, so one that moves costs nothing. A
// message counts as unchanged while its Parts slice is the same one as in
// the previous request: give an edited message new parts. A Model keeps
// the encodings of each conversation it serves, told apart by the first
// message, so conversations sharing one Model (a server's sessions,
// subagents side by side) do not undo each other's. The bytes are
// those the SDK would send for the same request; BuildParams and
// Model.Params return them decoded into the SDK's types.
//
// # Streaming
//
// Text, thinking and tool calls arrive as blocks, indexed as the API
// indexes them. Thinking text, its signature and redacted thinking are
// ReasoningDelta chunks; keep the assembled llm.Reasoning parts in the
// history and they are sent back as thinking or redacted_thinking blocks.
// Usage is reported from message_start and again, complete, from
// message_delta, always before the Finish chunk; Usage.Input excludes cache
// reads and writes, as Anthropic reports it. Finish reasons: end_turn,
// stop_sequence and pause_turn are stop; tool_use is tool-calls;
// max_tokens (and model_context_window_exceeded) is max-tokens; refusal
// is filtered. Server tool blocks (web search and the like) are skipped.
// A stream that ends without message_stop is a transport error.
//
// # Requests
//
// System sections become the system array; system-role messages in
// Messages are appended to it. Consecutive messages of one role are
// merged, tool results first in a user message. Empty text parts are
// dropped; so are reasoning parts without a signature or redacted data,
// and reasoning from an assistant message whose Provenance names another
// provider, since the API would reject them. A tool call's empty or
// malformed arguments are sent as {}. Images go as base64 (JPEG, PNG,
// GIF, WebP; sniffed when MediaType is empty) or URL; documents as base64
// PDF, plain text or URL.
//
// Tool choice maps auto, required (any), none and tool (named);
// ParallelToolCalls=false sets disable_parallel_tool_use. Reasoning
// enables extended thinking with BudgetTokens, or a budget from Effort
// (minimal 1024, low 2048, medium 8192, high 16384); budgets below 1024
// are raised to it. max_tokens is Request.MaxTokens, else
// Options.DefaultMaxTokens (8192); a budget at or above a defaulted
// max_tokens raises it to budget plus the default, while an explicit
// MaxTokens at or below the budget is an error. User becomes
// metadata.user_id. ResponseFormat becomes output_config.format (a JSON
// schema; models without structured outputs reject it).
//
// Ignored fields: Seed, PresencePenalty, FrequencyPenalty,
// Reasoning.Summary, ResponseFormat.Name and ResponseFormat.Strict.
//
// # Prompt caching
//
// Explicit CacheHint values on parts, system sections and tools become
// cache_control markers (hints on reasoning parts cannot be placed and are
// dropped). When Request.Cache is set, breakpoints are also placed on the
// last tool, the last system section, the newest message's last block and,
// when there is room, the previous user turn, so each step of a tool loop
// reads what the previous one wrote. A TTL of an hour or more is sent as
// "1h", anything shorter as the default five minutes. At most four
// breakpoints are sent: extras are dropped oldest message first, tools and
// system last. The API requires 1-hour breakpoints before 5-minute ones,
// so a breakpoint that precedes a 1-hour one is raised to 1 hour.
//
// # Errors
//
// Failures are *llm.ProviderError with the HTTP status, the request-id
// header, retry-after (retry-after-ms, seconds or an HTTP date), the API's
// error type as Code and its message: rate_limit_error and 429 are
// rate-limited; overloaded_error and 529 overloaded; other 5xx, 408 and
// 409 server; 401 and 403 auth; billing errors and credit, billing or
// spend-limit messages quota; "prompt is too long" and other context
// length messages context-too-long; other 4xx invalid. An error event
// after HTTP 200 is mapped by its type, with status 0. Network failures
// and cut streams are transport errors; a client timeout is a timeout.
// When ctx is done, the error wraps ctx's cause instead. The API key
// never appears in an error.
package anthropic
