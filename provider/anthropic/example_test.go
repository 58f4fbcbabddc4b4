package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/anthropic"
)

// A canned stream stands in for api.anthropic.com so the example runs
// offline; point BaseURL at the real API (or leave it empty) in use.
const cannedStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":9,"cache_read_input_tokens":1800,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"world."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

`

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, cannedStream)
	}))
	defer srv.Close()

	m, err := anthropic.New(&anthropic.Options{APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &llm.Request{
		Model:    "claude-sonnet-4-5",
		System:   []llm.Text{{Text: "Be brief."}},
		Messages: []llm.Message{llm.UserText("Say hello.")},
		Cache:    &llm.CacheHint{},
	}
	var a llm.Assembler
	for chunk, err := range m.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		a.Add(chunk)
	}
	res := a.Response()
	fmt.Println(res.Message.Text())
	fmt.Println(res.Finish, res.Message.Provenance.Model)
	fmt.Printf("input %d, cache read %d, output %d\n", res.Usage.Input, res.Usage.CacheRead, res.Usage.Output)
	// Output:
	// Hello, world.
	// stop claude-sonnet-4-5-20250929
	// input 9, cache read 1800, output 5
}

func ExampleBuildParams() {
	p, err := anthropic.BuildParams(&llm.Request{
		Model:     "claude-sonnet-4-5",
		Messages:  []llm.Message{llm.UserText("Think first.")},
		Reasoning: &llm.ReasoningOptions{Effort: llm.EffortMedium},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.MaxTokens, p.Thinking.OfEnabled.BudgetTokens)
	// Output:
	// 16384 8192
}
