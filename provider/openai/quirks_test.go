package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

// sse builds a stream from data payloads.
func sse(payloads ...string) []byte {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: " + p + "\n\n")
	}
	return []byte(b.String())
}

func TestChatQuirks(t *testing.T) {
	call := func(id, name, args string) *llm.ToolCall {
		return &llm.ToolCall{ID: llm.CallID(id), Name: name, Args: json.RawMessage(args)}
	}
	tests := []struct {
		name   string
		body   []byte
		parts  []llm.Part
		usage  llm.Usage
		finish llm.FinishReason
	}{
		{
			name: "tool call without id gets a synthetic one",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"ls","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
			parts:  []llm.Part{call("", "ls", "{}")},
			finish: llm.FinishToolCalls,
		},
		{
			name: "whole call in one chunk and args split with id only first",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"x","arguments":"{\"k\":1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"y","arguments":"{\"q\""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
			parts:  []llm.Part{call("a", "x", `{"k":1}`), call("b", "y", `{"q":2}`)},
			finish: llm.FinishToolCalls,
		},
		{
			name: "every call at index 0 told apart by id",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			parts:  []llm.Part{call("a", "x", "{}"), call("b", "y", "{}")},
			finish: llm.FinishToolCalls,
		},
		{
			name: "usage in the last choice chunk and no DONE",
			body: sse(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":10,"completion_tokens":2}}]}`),
			parts:  []llm.Part{&llm.Text{Text: "hi"}},
			usage:  llm.Usage{Input: 10, Output: 2},
			finish: llm.FinishStop,
		},
		{
			name: "usage null everywhere",
			body: sse(`{"usage":null,"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
				`{"usage":null,"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, `[DONE]`),
			parts:  []llm.Part{&llm.Text{Text: "hi"}},
			finish: llm.FinishMaxTokens,
		},
		{
			name: "cached and reasoning tokens normalised",
			body: sse(`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":50,"prompt_tokens_details":{"cached_tokens":800},"completion_tokens_details":{"reasoning_tokens":30}}}`),
			parts:  []llm.Part{&llm.Text{Text: "ok"}},
			usage:  llm.Usage{Input: 200, Output: 50, Reasoning: 30, CacheRead: 800},
			finish: llm.FinishStop,
		},
		{
			name: "deepseek cache hit tokens",
			body: sse(`{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`),
			parts:  []llm.Part{&llm.Reasoning{Text: "think"}, &llm.Text{Text: "ok"}},
			usage:  llm.Usage{Input: 36, Output: 5, CacheRead: 64},
			finish: llm.FinishStop,
		},
		{
			name: "reasoning field and empty choices",
			body: sse(`{"choices":[]}`, `{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"yes"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`),
			parts:  []llm.Part{&llm.Reasoning{Text: "hmm"}, &llm.Text{Text: "yes"}},
			finish: llm.FinishStop,
		},
		{
			name:   "finish chunk with no choices: DONE ends it",
			body:   sse(`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[]}`, `[DONE]`),
			parts:  []llm.Part{&llm.Text{Text: "a"}},
			finish: llm.FinishStop,
		},
		{
			name: "content filter and content as parts",
			body: sse(`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"par"},{"type":"text","text":"ts"}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`),
			parts:  []llm.Part{&llm.Text{Text: "parts"}},
			finish: llm.FinishFiltered,
		},
		{
			name: "CRLF lines, comments and arguments as an object",
			body: []byte(": keep-alive\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\r\n\r\n"),
			parts:  []llm.Part{call("c", "f", `{"a":1}`)},
			finish: llm.FinishToolCalls,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, 200, map[string][]string{"Content-Type": {"text/event-stream"}}, tt.body)
			m := newTestModel(t, "chat", &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
			var chunks []llm.Chunk
			for c, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
				if err != nil {
					t.Fatal(err)
				}
				chunks = append(chunks, c)
			}
			checkProtocol(t, chunks)
			a := llm.Assembler{IDPrefix: "t"}
			for _, c := range chunks {
				a.Add(c)
			}
			r := a.Response()
			want := tt.parts
			for _, p := range want {
				if c, ok := p.(*llm.ToolCall); ok && c.ID == "" {
					c.ID = "call_t_0"
				}
			}
			if diff := cmp.Diff(want, r.Message.Parts); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.usage, r.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if r.Finish != tt.finish {
				t.Errorf("finish = %q, want %q", r.Finish, tt.finish)
			}
			if p := r.Message.Provenance; p == nil || p.Provider != "openai" || p.Model != "m" {
				t.Errorf("provenance = %+v", p)
			}
		})
	}
}

// checkProtocol asserts the chunk protocol: usage before finish, finish
// last and once, every block started before its deltas and ended once.
func checkProtocol(t *testing.T, chunks []llm.Chunk) {
	t.Helper()
	started := map[int]bool{}
	ended := map[int]bool{}
	for i, c := range chunks {
		switch c := c.(type) {
		case *llm.BlockStart:
			if started[c.Index] {
				t.Errorf("chunk %d: block %d started twice", i, c.Index)
			}
			started[c.Index] = true
		case *llm.TextDelta, *llm.ReasoningDelta, *llm.ToolCallDelta:
			var idx int
			switch c := c.(type) {
			case *llm.TextDelta:
				idx = c.Index
			case *llm.ReasoningDelta:
				idx = c.Index
			case *llm.ToolCallDelta:
				idx = c.Index
			}
			if !started[idx] || ended[idx] {
				t.Errorf("chunk %d: delta for block %d outside its start/end", i, idx)
			}
		case *llm.BlockEnd:
			if !started[c.Index] || ended[c.Index] {
				t.Errorf("chunk %d: bad end of block %d", i, c.Index)
			}
			ended[c.Index] = true
		case *llm.UsageChunk:
			for _, later := range chunks[i+1:] {
				if _, ok := later.(*llm.Finish); !ok {
					t.Errorf("chunk %d: usage not directly before finish", i)
				}
			}
		case *llm.Finish:
			if i != len(chunks)-1 {
				t.Errorf("finish at %d of %d", i, len(chunks))
			}
		}
	}
	for b := range started {
		if !ended[b] {
			t.Errorf("block %d never ended", b)
		}
	}
}

func TestResponsesQuirks(t *testing.T) {
	body := sse(
		`{"type":"response.created","response":{"id":"resp_1","model":"o4-mini"}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
		`{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"First."}`,
		`{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"Second."}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"ENC","summary":[{"text":"First."},{"text":"Second."}]}}`,
		// A message announced by nothing but its done item.
		`{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Partial answer"}]}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_9","name":"f","arguments":""}}`,
		`{"type":"response.output_item.done","output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_9","name":"f","arguments":"{\"x\":1}"}}`,
		`{"type":"response.incomplete","response":{"id":"resp_1","model":"o4-mini","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":500,"input_tokens_details":{"cached_tokens":300},"output_tokens":100,"output_tokens_details":{"reasoning_tokens":60}}}}`,
	)
	srv, _ := serve(t, 200, map[string][]string{"Content-Type": {"text/event-stream"}}, body)
	m := newTestModel(t, "responses", &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
	var chunks []llm.Chunk
	for c, err := range m.Stream(context.Background(), &llm.Request{Model: "o4-mini"}) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	checkProtocol(t, chunks)
	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	r := a.Response()
	want := []llm.Part{
		&llm.Reasoning{Text: "First.\n\nSecond.", Signature: "rs_1", Redacted: "ENC"},
		&llm.Text{Text: "Partial answer"},
		&llm.ToolCall{ID: "call_9", Name: "f", Args: json.RawMessage(`{"x":1}`)},
	}
	if diff := cmp.Diff(want, r.Message.Parts); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(llm.Usage{Input: 200, CacheRead: 300, Output: 100, Reasoning: 60}, r.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if r.Finish != llm.FinishMaxTokens {
		t.Errorf("finish = %q, want max-tokens", r.Finish)
	}

	// The reasoning item replays to the same provider, and only to it.
	next := &llm.Request{Model: "o4-mini", Messages: []llm.Message{r.Message}}
	rm := m.(*Responses)
	b, err := rm.RequestBody(next)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"type":"reasoning","id":"rs_1","encrypted_content":"ENC"`) {
		t.Errorf("reasoning item not replayed: %s", b)
	}
	r.Message.Provenance = &llm.Provenance{Provider: "anthropic"}
	b, _ = rm.RequestBody(&llm.Request{Model: "o4-mini", Messages: []llm.Message{r.Message}})
	if strings.Contains(string(b), `"type":"reasoning"`) {
		t.Errorf("another provider's reasoning was replayed: %s", b)
	}
}

func TestEarlyBreakClosesBody(t *testing.T) {
	for _, api := range []string{"chat", "responses"} {
		t.Run(api, func(t *testing.T) {
			closed := make(chan struct{})
			srv := newBlockingServer(t, api, closed)
			m := newTestModel(t, api, &Options{APIKey: "k", BaseURL: srv + "/v1"})
			for range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
				break
			}
			<-closed // the handler sees the client go away
		})
	}
}

func TestChatNonStreamedAnswer(t *testing.T) {
	body := []byte(`{"id":"x","object":"chat.completion","model":"qwen3","choices":[{"index":0,"message":{"role":"assistant","content":"Sure.","reasoning_content":"easy","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":3}}`)
	srv, _ := serve(t, 200, map[string][]string{"Content-Type": {"application/json; charset=utf-8"}}, body)
	m := newTestModel(t, "chat", &Options{Provider: ProviderVLLM, BaseURL: srv.URL + "/v1"})
	var chunks []llm.Chunk
	for c, err := range m.Stream(context.Background(), &llm.Request{Model: "qwen3"}) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	checkProtocol(t, chunks)
	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	r := a.Response()
	want := []llm.Part{
		&llm.Reasoning{Text: "easy"},
		&llm.Text{Text: "Sure."},
		&llm.ToolCall{ID: "c1", Name: "f", Args: json.RawMessage(`{}`)},
		&llm.ToolCall{ID: "c2", Name: "g", Args: json.RawMessage(`{"a":1}`)},
	}
	if diff := cmp.Diff(want, r.Message.Parts); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if r.Finish != llm.FinishToolCalls || r.Usage != (llm.Usage{Input: 9, Output: 3}) {
		t.Errorf("finish %q usage %+v", r.Finish, r.Usage)
	}
}

func TestFinishChunkSaysToolCalls(t *testing.T) {
	tests := []struct {
		name, api string
		body      []byte
	}{
		{name: "chat stop with calls", api: "chat", body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}`)},
		{name: "responses completed with calls", api: "responses", body: sse(
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"a","name":"f","arguments":""}}`,
			`{"type":"response.completed","response":{"id":"r","model":"m"}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, 200, map[string][]string{"Content-Type": {"text/event-stream"}}, tt.body)
			m := newTestModel(t, tt.api, &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
			var last llm.Chunk
			for c, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
				if err != nil {
					t.Fatal(err)
				}
				last = c
			}
			f, ok := last.(*llm.Finish)
			if !ok || f.Reason != llm.FinishToolCalls {
				t.Errorf("last chunk %#v, want Finish tool-calls", last)
			}
		})
	}
}

// oneByte reads one byte at a time, as a slow network might deliver.
type oneByte struct{ b []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	p[0] = o.b[0]
	o.b = o.b[1:]
	return 1, nil
}

func TestDecodeSplitReads(t *testing.T) {
	for _, tt := range []struct{ api, cassette string }{
		{"chat", "fantasy__openai_chat_gpt-4o_parallel_tool_streaming.yaml"},
		{"chat", "fantasy__llama_cpp_gpt-oss_tool_streaming.yaml"},
		{"responses", "fantasy__openai_responses_gpt-5_tool_streaming.yaml"},
	} {
		for i, it := range loadCassette(t, tt.cassette).Interactions {
			body := []byte(it.Response.Body)
			run := func(r io.Reader) *llm.Response {
				var a llm.Assembler
				yield := func(c llm.Chunk, err error) bool { a.Add(c); return true }
				var err error
				if tt.api == "chat" {
					err = newChatDecoder("openai", "m", "").run(r, yield)
				} else {
					err = newRespDecoder("openai", "m", "").run(r, yield)
				}
				if err != nil {
					t.Fatalf("%s #%d: %v", tt.cassette, i, err)
				}
				return a.Response()
			}
			whole := run(bytes.NewReader(body))
			split := run(&oneByte{body})
			if diff := cmp.Diff(whole, split); diff != "" {
				t.Errorf("%s #%d: byte-at-a-time differs (-whole +split):\n%s", tt.cassette, i, diff)
			}
		}
	}
}
