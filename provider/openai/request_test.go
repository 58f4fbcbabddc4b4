package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

func ptr[T any](v T) *T { return &v }

// fullRequest exercises every mapped field: system sections, tools, a
// named tool choice, reasoning, sampling, a response format, an image by
// URL and inline, a replayed reasoning item, and a failed tool result.
func fullRequest() *llm.Request {
	png := []byte{0x89, 'P', 'N', 'G'}
	return &llm.Request{
		Model:  "gpt-5",
		System: []llm.Text{{Text: "You are terse."}, {Text: "Answer in English."}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{
				&llm.Text{Text: "What is in this picture, and what is the weather?"},
				&llm.Image{URL: "https://example.com/cat.jpg"},
				&llm.Image{MediaType: "image/png", Data: png},
				&llm.Document{MediaType: "application/pdf", Data: []byte("%PDF-1.7"), Title: "report.pdf"},
				&llm.Document{MediaType: "text/markdown", Data: []byte("# Notes"), Title: "notes.md"},
			}},
			{Role: llm.RoleAssistant, Provenance: &llm.Provenance{Provider: "openai", Model: "gpt-5"}, Parts: []llm.Part{
				&llm.Reasoning{Text: "Need the weather tool.", Signature: "rs_123", Redacted: "gAAAAencrypted"},
				&llm.Text{Text: "A cat. Checking the weather."},
				&llm.ToolCall{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Florence"}`)},
				&llm.ToolCall{ID: "call_2", Name: "clock"},
			}},
			{Role: llm.RoleUser, Parts: []llm.Part{
				&llm.ToolResult{CallID: "call_1", Parts: []llm.Part{&llm.Text{Text: "40 C"}}},
				&llm.ToolResult{CallID: "call_2", IsError: true, Parts: []llm.Part{&llm.Text{Text: "clock unavailable"}}},
				&llm.Text{Text: "Thanks <3"},
			}},
		},
		Tools: []llm.ToolSpec{
			{Name: "weather", Description: "Weather for a city", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "clock", Description: "The time"},
		},
		ToolChoice:        llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "weather"},
		ParallelToolCalls: ptr(false),
		Temperature:       ptr(0.2),
		TopP:              ptr(0.9),
		TopK:              ptr(40),
		MaxTokens:         1000,
		Stop:              []string{"END"},
		Seed:              ptr(int64(7)),
		PresencePenalty:   ptr(0.1),
		FrequencyPenalty:  ptr(0.3),
		Reasoning:         &llm.ReasoningOptions{Effort: llm.EffortHigh, Summary: "auto", BudgetTokens: 5000},
		ResponseFormat:    &llm.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		User:              "user-42",
	}
}

// capture runs one request against a server that records the body and
// headers and answers with an empty, finished stream.
func capture(t *testing.T, api string, o Options, req *llm.Request) ([]byte, http.Header) {
	t.Helper()
	var body []byte
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := new(bytes.Buffer)
		b.ReadFrom(r.Body)
		body, hdr = b.Bytes(), r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		if api == "responses" {
			w.Write([]byte("data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\"}}\n\n"))
			return
		}
		w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	o.BaseURL = srv.URL + "/v1"
	m := newTestModel(t, api, &o)
	for _, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	return body, hdr
}

func indent(t *testing.T, b []byte) json.RawMessage {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return out.Bytes()
}

func TestRequestBodies(t *testing.T) {
	simple := &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}}
	tests := []struct {
		name   string
		api    string
		opts   Options
		req    *llm.Request
		golden string
	}{
		{name: "chat openai full", api: "chat", opts: Options{APIKey: "k"}, req: fullRequest(), golden: "request_chat_openai.json"},
		{name: "chat openai simple", api: "chat", opts: Options{APIKey: "k"}, req: simple, golden: "request_chat_simple.json"},
		{name: "chat llama.cpp full", api: "chat", opts: Options{Provider: ProviderLlamaCpp}, req: fullRequest(), golden: "request_chat_llamacpp.json"},
		{name: "chat strict developer", api: "chat", opts: Options{APIKey: "k", StrictTools: true, Compat: &Compat{DeveloperRole: true, NoStreamUsage: true}}, req: fullRequest(), golden: "request_chat_strict_developer.json"},
		{name: "responses full", api: "responses", opts: Options{APIKey: "k"}, req: fullRequest(), golden: "request_responses_openai.json"},
		{name: "responses simple", api: "responses", opts: Options{APIKey: "k"}, req: simple, golden: "request_responses_simple.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := capture(t, tt.api, tt.opts, tt.req)
			checkGolden(t, tt.golden, indent(t, body))
			// The exported builder produces exactly what is sent.
			m := newTestModel(t, tt.api, &Options{APIKey: "k", Provider: tt.opts.Provider, Compat: tt.opts.Compat, StrictTools: tt.opts.StrictTools, BaseURL: "http://unused/v1"})
			var built []byte
			var err error
			switch m := m.(type) {
			case *Chat:
				built, err = m.RequestBody(tt.req)
			case *Responses:
				built, err = m.RequestBody(tt.req)
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(body), string(built)); diff != "" {
				t.Errorf("RequestBody differs from the sent body (-sent +built):\n%s", diff)
			}
		})
	}
}

func TestRequestDoesNotModifyInput(t *testing.T) {
	for _, api := range []string{"chat", "responses"} {
		req := fullRequest()
		before, _ := json.Marshal(req)
		capture(t, api, Options{APIKey: "k"}, req)
		after, _ := json.Marshal(req)
		if diff := cmp.Diff(string(before), string(after)); diff != "" {
			t.Errorf("%s: request modified (-before +after):\n%s", api, diff)
		}
	}
}

func TestRequestHeaders(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient-should-not-leak")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	tests := []struct {
		name     string
		opts     Options
		wantAuth string
	}{
		{name: "openai key", opts: Options{APIKey: "sk-test"}, wantAuth: "Bearer sk-test"},
		{name: "ollama sends no key", opts: Options{Provider: ProviderOllama}, wantAuth: ""},
		{name: "custom headers", opts: Options{Provider: ProviderCompatible, APIKey: "abc", Headers: map[string]string{"HTTP-Referer": "https://rein.dev"}}, wantAuth: "Bearer abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, h := capture(t, "chat", tt.opts, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}})
			if got := h.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if got := h.Get("Openai-Organization"); got != "" {
				t.Errorf("ambient organisation leaked: %q", got)
			}
			if got, want := h.Get("Accept"), "text/event-stream"; got != want {
				t.Errorf("Accept = %q, want %q", got, want)
			}
			for k, v := range tt.opts.Headers {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		api  string
		req  *llm.Request
		want error
	}{
		{name: "chat document by URL", api: "chat", req: &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{&llm.Document{URL: "https://x/a.pdf"}}}}}, want: ErrUnsupported},
		{name: "inline image without media type", api: "responses", req: &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{&llm.Image{Data: []byte{1}}}}}}, want: ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestModel(t, tt.api, &Options{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1"})
			var got error
			for _, err := range m.Stream(context.Background(), tt.req) {
				got = err
			}
			if !errors.Is(got, tt.want) {
				t.Errorf("error = %v, want %v", got, tt.want)
			}
		})
	}
}
