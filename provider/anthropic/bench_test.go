package anthropic

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/reinhq/rein/llm"
)

// BenchmarkDecodeAssemble decodes each recorded stream and folds it into a
// message, as Stream plus an Assembler do, without the network.
func BenchmarkDecodeAssemble(b *testing.B) {
	for _, fx := range fixtures {
		for i, ex := range fx.load(b, filepath.Join("testdata", fx.file)) {
			b.Run(fixtureName(fx.name, i), func(b *testing.B) {
				b.SetBytes(int64(len(ex.Body)))
				b.ReportAllocs()
				r := bytes.NewReader(ex.Body)
				for b.Loop() {
					r.Reset(ex.Body)
					var a llm.Assembler
					d := decoder{provider: "anthropic"}
					if err := d.decode(r, func(c llm.Chunk) bool { a.Add(c); return true }); err != nil {
						b.Fatal(err)
					}
					_ = a.Message()
				}
			})
		}
	}
}

// BenchmarkBuildBody builds the body of a request 50 tool calls deep with
// automatic cache breakpoints: from scratch, and as the next step of a
// conversation whose earlier messages are kept (one op is one step).
func BenchmarkBuildBody(b *testing.B) {
	req := &llm.Request{
		Model:  "claude-sonnet-4-5",
		System: []llm.Text{{Text: "You are a weather bot."}},
		Tools:  tools("weather", "forecast"),
		Cache:  &llm.CacheHint{},
	}
	req.Messages = append(req.Messages, llm.UserText("Weather everywhere?"))
	for i := range 50 {
		id := "toolu_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		req.Messages = append(req.Messages, call(id, "weather", `{"location":"Paris"}`), toolResult(id, "22 C"))
	}
	cfg := buildConfig{provider: "anthropic", maxTokens: DefaultMaxTokens}
	b.Run("scratch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := build(new(bodyCache), req, cfg, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		// Two conversations of req's length on one Model, as a server's
		// sessions or subagents side by side: each op is one more
		// exchange of one of them, in turn.
		var m *Model
		convs := [2]llm.Request{*req, *req}
		for k := range convs {
			convs[k].Messages = append([]llm.Message{llm.UserText("conversation " + strconv.Itoa(k))}, req.Messages[1:]...)
		}
		step := func(c *llm.Request) {
			conv := m.convs.Lock(c)
			defer conv.Unlock()
			if _, err := build(&conv.Cache, c, cfg, false); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%200 == 0 {
				b.StopTimer()
				m = &Model{cfg: cfg}
				for k := range convs {
					convs[k].Messages = convs[k].Messages[:len(req.Messages):len(req.Messages)]
					step(&convs[k])
				}
				b.StartTimer()
			}
			i++
			c := &convs[i%2]
			id := "toolu_next" + strconv.Itoa(i)
			c.Messages = append(c.Messages, call(id, "weather", `{"location":"Oslo"}`), toolResult(id, "9 C"))
			step(c)
		}
	})
	b.Run("next_step", func(b *testing.B) {
		// One exchange more per op, as an agent loop grows its history;
		// every 100 ops the history starts again from req's.
		var c *bodyCache
		step := *req
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%100 == 0 {
				b.StopTimer()
				c, step.Messages = new(bodyCache), req.Messages[:len(req.Messages):len(req.Messages)]
				if _, err := build(c, &step, cfg, false); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			i++
			id := "toolu_next" + strconv.Itoa(i)
			step.Messages = append(step.Messages, call(id, "weather", `{"location":"Oslo"}`), toolResult(id, "9 C"))
			if _, err := build(c, &step, cfg, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStream runs whole Stream calls (request build, HTTP over
// loopback, decode, assemble) against a recorded thinking response.
func BenchmarkStream(b *testing.B) {
	ex := loadCassette(b, filepath.Join("testdata", "fantasy__anthropic_thinking_tool_streaming.yaml"))[0]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(ex.Body)
	}))
	defer srv.Close()
	m, err := New(&Options{APIKey: "test", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := simpleRequest()
	b.SetBytes(int64(len(ex.Body)))
	b.ReportAllocs()
	for b.Loop() {
		var a llm.Assembler
		for c, err := range m.Stream(context.Background(), req) {
			if err != nil {
				b.Fatal(err)
			}
			a.Add(c)
		}
	}
}
