// Package rein is an agent harness for Go: it runs a language model in a
// loop with tools and keeps every step on an append-only session log that
// can be watched, steered, gated, resumed and replayed.
//
// This root package holds no code; the library lives in its subpackages,
// from the bottom up:
//
//   - llm: the provider-neutral model wire (messages, requests, the chunk
//     stream protocol, the Assembler, usage, errors, the model catalog);
//     llm/llmtest has a scripted model and a fake provider server.
//   - provider/anthropic, provider/openai: adapters to real providers.
//   - session: the event log, its derivation into messages, and stores
//     (session/jsonl, session/sqlite, session/postgres).
//   - tool: the tool seam, typed tools, validation; built-in tools below it.
//   - hook: interception points and observers.
//   - agent: the loop.
//   - cmd/rein: the command-line host.
package rein
