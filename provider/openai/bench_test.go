package openai

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/reinhq/rein/llm"
)

// BenchmarkDecodeAssemble measures SSE decoding plus assembly of each
// recorded stream, without HTTP: MB/s is over the raw SSE bytes.
func BenchmarkDecodeAssemble(b *testing.B) {
	streams := []struct {
		name string
		api  string
		body []byte
	}{
		{name: "chat_gpt-4o_parallel_tools", api: "chat", body: []byte(loadCassette(b, "fantasy__openai_chat_gpt-4o_parallel_tool_streaming.yaml").Interactions[0].Response.Body)},
		{name: "chat_gpt-4o_text", api: "chat", body: []byte(loadCassette(b, "fantasy__openai_chat_gpt-4o_parallel_tool_streaming.yaml").Interactions[1].Response.Body)},
		{name: "chat_llama.cpp_reasoning", api: "chat", body: []byte(loadCassette(b, "fantasy__llama_cpp_gpt-oss_tool_streaming.yaml").Interactions[0].Response.Body)},
		{name: "responses_gpt-5_tool", api: "responses", body: []byte(loadCassette(b, "fantasy__openai_responses_gpt-5_tool_streaming.yaml").Interactions[0].Response.Body)},
		{name: "responses_gpt-5_text", api: "responses", body: []byte(loadCassette(b, "fantasy__openai_responses_gpt-5_tool_streaming.yaml").Interactions[1].Response.Body)},
	}
	for _, s := range streams {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(s.body)))
			b.ReportAllocs()
			var r bytes.Reader
			for b.Loop() {
				r.Reset(s.body)
				var a llm.Assembler
				yield := func(c llm.Chunk, err error) bool { a.Add(c); return true }
				var err error
				if s.api == "chat" {
					err = newChatDecoder("openai", "m", "").run(&r, yield)
				} else {
					err = newRespDecoder("openai", "m", "").run(&r, yield)
				}
				if err != nil {
					b.Fatal(err)
				}
				_ = a.Response()
			}
		})
	}
}

// BenchmarkRequestBody measures encoding a request with a history of n
// exchanges (user text, assistant call, tool result): from scratch, and as
// the next step of a conversation whose earlier messages are kept
// ("next"), where only the newest exchange is encoded.
func BenchmarkRequestBody(b *testing.B) {
	for _, n := range []int{10, 100} {
		req := fullRequest()
		for i := range n {
			id := llm.CallID(fmt.Sprintf("call_%d", i))
			req.Messages = append(req.Messages,
				llm.UserText("please read the next file and summarise it"),
				llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "Reading it."}, &llm.ToolCall{ID: id, Name: "read", Args: []byte(`{"path":"src/main.go"}`)}}},
				llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: "package main\n\nfunc main() {}\n"}}}}})
		}
		for _, api := range []string{"chat", "responses"} {
			b.Run(fmt.Sprintf("%s/history=%d", api, n), func(b *testing.B) {
				m := newTestModel(b, api, &Options{APIKey: "k", BaseURL: "http://unused/v1"})
				b.ReportAllocs()
				for b.Loop() {
					var err error
					switch m := m.(type) {
					case *Chat:
						_, err = m.RequestBody(req)
					case *Responses:
						_, err = m.RequestBody(req)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/history=%d/next", api, n), func(b *testing.B) {
				benchNextStep(b, api, req)
			})
		}
	}
}

// benchNextStep grows req's history by one exchange per op, as an agent
// loop does, on a model that keeps the earlier messages' encodings; every
// 100 ops the history starts again from req's.
func benchNextStep(b *testing.B, api string, req *llm.Request) {
	var m llm.Model
	step := *req
	body := func() error {
		var err error
		switch m := m.(type) {
		case *Chat:
			conv := m.convs.Lock(&step)
			_, err = m.cfg.chatBody(&conv.Cache, &step)
			conv.Unlock()
		case *Responses:
			conv := m.convs.Lock(&step)
			_, err = m.cfg.respBody(&conv.Cache, &step)
			conv.Unlock()
		}
		return err
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%100 == 0 {
			b.StopTimer()
			m = newTestModel(b, api, &Options{APIKey: "k", BaseURL: "http://unused/v1"})
			step.Messages = req.Messages[:len(req.Messages):len(req.Messages)]
			if err := body(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		i++
		id := llm.CallID(fmt.Sprintf("next_%d", i))
		step.Messages = append(step.Messages,
			llm.UserText("and the next one"),
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.ToolCall{ID: id, Name: "read", Args: []byte(`{"path":"src/next.go"}`)}}},
			llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: "package next\n"}}}}})
		if err := body(); err != nil {
			b.Fatal(err)
		}
	}
}
