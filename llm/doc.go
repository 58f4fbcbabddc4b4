// Package llm is rein's provider-neutral model wire: the types every
// adapter, the loop and the session log agree on.
//
//   - A conversation is a []Message; a Message is a Role plus Parts, a
//     closed set: *Text, *Reasoning, *ToolCall, *ToolResult, *Image,
//     *Document. Parts encode to JSON tagged by "type" (MarshalPart,
//     UnmarshalPart).
//   - A Request is one model call, fully assembled: model, system prompt,
//     messages, tools, tool choice, sampling, reasoning, response format
//     and cache hints.
//   - A Model streams its answer as Chunks: BlockStart, TextDelta,
//     ReasoningDelta, ToolCallDelta, BlockEnd, UsageChunk and Finish, in
//     that protocol (usage before finish, finish last, an error terminal).
//   - An Assembler folds chunks into a Message, Usage and FinishReason;
//     Collect does it for a whole stream.
//   - Failures are *ProviderError with a Kind that retry and fallback
//     policies branch on.
//   - A Catalog knows models' context windows and prices; Cost prices a
//     Usage.
//
// Quick start — stream a response and assemble it as it arrives:
//
//	req := &llm.Request{
//		Model:     "claude-sonnet-4-5",
//		System:    []llm.Text{{Text: "You are terse."}},
//		Messages:  []llm.Message{llm.UserText("What is rein?")},
//		MaxTokens: 1024,
//	}
//	var a llm.Assembler
//	for chunk, err := range model.Stream(ctx, req) {
//		if err != nil {
//			if llm.IsRetryable(err) { /* back off and send req again */ }
//			return err
//		}
//		if d, ok := chunk.(*llm.TextDelta); ok {
//			fmt.Print(d.Text) // show text as it streams
//		}
//		a.Add(chunk)
//	}
//	res := a.Response() // Message, Usage, Finish
//	cost, _ := llm.DefaultCatalog().Cost(req.Model, res.Usage)
//
// Or, when nothing needs to be shown as it streams:
//
//	res, err := llm.Collect(model.Stream(ctx, req))
//
// model is any Model: a provider adapter (provider/anthropic,
// provider/openai), or in tests the scripted model and fake provider
// server of llm/llmtest. This package imports only the standard library.
package llm
