package llm_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// Stream from a model and assemble the response as it arrives. The model
// here is llmtest's scripted model; a provider adapter is used the same way.
func Example() {
	model := llmtest.NewModel(
		llmtest.CallTool("call_1", "read_file", `{"path":"go.mod"}`),
		llmtest.Reply("The module is github.com/reinhq/rein."),
	)
	req := &llm.Request{
		Model:     "claude-sonnet-4-5",
		Messages:  []llm.Message{llm.UserText("Which module is this?")},
		MaxTokens: 1024,
	}
	ctx := context.Background()

	var a llm.Assembler
	for chunk, err := range model.Stream(ctx, req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		a.Add(chunk)
	}
	res := a.Response()
	for _, call := range res.Message.ToolCalls() {
		fmt.Printf("call %s %s(%s)\n", call.ID, call.Name, call.Args)
	}
	fmt.Println("finish:", res.Finish)

	// Answer the call and ask again.
	req.Messages = append(req.Messages, res.Message, llm.Message{
		Role:  llm.RoleUser,
		Parts: []llm.Part{&llm.ToolResult{CallID: "call_1", Parts: []llm.Part{&llm.Text{Text: "module github.com/reinhq/rein"}}}},
	})
	res, err := llm.Collect(model.Stream(ctx, req))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Message.Text())
	fmt.Println("finish:", res.Finish)
	// Output:
	// call call_1 read_file({"path":"go.mod"})
	// finish: tool-calls
	// The module is github.com/reinhq/rein.
	// finish: stop
}

func ExampleCatalog_Cost() {
	u := llm.Usage{Input: 2_000, CacheRead: 50_000, Output: 1_000}
	cost, ok := llm.DefaultCatalog().Cost("claude-sonnet-4-5-20250929", u)
	fmt.Printf("$%.4f %v\n", cost, ok)
	// Output: $0.0360 true
}

func ExampleAssembler() {
	var a llm.Assembler
	for _, c := range []llm.Chunk{
		&llm.TextDelta{Index: 0, Text: "Hello, "},
		&llm.TextDelta{Index: 0, Text: "world."},
		&llm.UsageChunk{Usage: llm.Usage{Input: 12, Output: 3}},
		&llm.Finish{Reason: llm.FinishStop},
	} {
		a.Add(c)
	}
	fmt.Println(a.Message().Text(), a.Usage().Total(), a.FinishReason())
	// Output: Hello, world. 15 stop
}

func ExampleProviderError() {
	err := fmt.Errorf("step 2: %w", &llm.ProviderError{
		Kind: llm.ErrQuota, Provider: "openai", StatusCode: 429,
		Message: "You exceeded your current quota",
	})
	fmt.Println(llm.KindOf(err), llm.IsRetryable(err))
	fmt.Println(err)
	// Output:
	// quota false
	// step 2: openai: quota (HTTP 429): You exceeded your current quota; add credit or raise the spend limit, retrying will not help
}
