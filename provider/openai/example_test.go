package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/openai"
)

// A stand-in for a Chat Completions server, so the example runs offline.
func fakeServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"Hello"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":", world."},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

func ExampleNewChat() {
	srv := fakeServer()
	defer srv.Close()

	m, err := openai.NewChat(&openai.Options{APIKey: "sk-example", BaseURL: srv.URL + "/v1"})
	if err != nil {
		panic(err)
	}
	req := &llm.Request{Model: "gpt-4o", Messages: []llm.Message{llm.UserText("Say hello")}}
	var a llm.Assembler
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			panic(err)
		}
		a.Add(c)
	}
	r := a.Response()
	fmt.Println(r.Message.Text())
	fmt.Println(r.Message.Provenance.Model, r.Finish)
	fmt.Printf("input %d, cached %d, output %d\n", r.Usage.Input, r.Usage.CacheRead, r.Usage.Output)
	// Output:
	// Hello, world.
	// gpt-4o-2024-08-06 stop
	// input 4, cached 8, output 4
}

func ExamplePreset() {
	o, err := openai.Preset(openai.ProviderOllama)
	if err != nil {
		panic(err)
	}
	fmt.Println(o.BaseURL, o.Compat.MaxTokensField)

	_, err = openai.Preset("nope")
	fmt.Println(err)
	// Output:
	// http://localhost:11434/v1 max_tokens
	// openai: unknown provider "nope"; use one of deepseek, llama.cpp, ollama, openai, openai-compatible, openrouter, vllm
}

func ExampleChat_RequestBody() {
	m, _ := openai.NewChat(&openai.Options{Provider: openai.ProviderCompatible, BaseURL: "http://localhost:8000/v1"})
	body, _ := m.RequestBody(&llm.Request{Model: "qwen3", MaxTokens: 100, Messages: []llm.Message{llm.UserText("hi")}})
	fmt.Println(string(body))
	// Output:
	// {"model":"qwen3","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":100}
}

func ExampleNewResponses() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`{"type":"response.created","response":{"id":"resp_1","model":"o4-mini-2025-04-16"}}`,
			`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
			`{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"Simple arithmetic."}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAA…"}}`,
			`{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","content":[]}}`,
			`{"type":"response.output_text.delta","output_index":1,"delta":"4"}`,
			`{"type":"response.completed","response":{"id":"resp_1","model":"o4-mini-2025-04-16","usage":{"input_tokens":20,"output_tokens":70,"output_tokens_details":{"reasoning_tokens":64}}}}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
	}))
	defer srv.Close()

	m, err := openai.NewResponses(&openai.Options{APIKey: "sk-example", BaseURL: srv.URL + "/v1"})
	if err != nil {
		panic(err)
	}
	req := &llm.Request{
		Model:     "o4-mini",
		Reasoning: &llm.ReasoningOptions{Effort: llm.EffortLow, Summary: "auto"},
		Messages:  []llm.Message{llm.UserText("2+2?")},
	}
	var a llm.Assembler
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			panic(err)
		}
		a.Add(c)
	}
	r := a.Response()
	for _, p := range r.Message.Parts {
		switch p := p.(type) {
		case *llm.Reasoning:
			// Signature and Redacted go back with the history next time.
			fmt.Printf("reasoning %q (item %s, encrypted %t)\n", p.Text, p.Signature, p.Redacted != "")
		case *llm.Text:
			fmt.Printf("answer %q\n", p.Text)
		}
	}
	fmt.Println("reasoning tokens:", r.Usage.Reasoning)
	// Output:
	// reasoning "Simple arithmetic." (item rs_1, encrypted true)
	// answer "4"
	// reasoning tokens: 64
}
