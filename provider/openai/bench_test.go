package openai

import (
	"bytes"
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
