package anthropic

import (
	"context"
	"encoding/json"
	"github.com/reinhq/rein/internal/golden"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

// recorder serves canned responses in order and keeps the request bodies.
type recorder struct {
	mu        sync.Mutex
	responses []exchange
	bodies    [][]byte
	headers   []http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	if n >= len(r.responses) {
		http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no more recorded responses"}}`, http.StatusInternalServerError)
		return
	}
	ex := r.responses[n]
	for k, vs := range ex.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(ex.Status)
	w.Write(ex.Body)
}

func (r *recorder) body(i int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[i]
}

// replay starts a server answering with exs and a Model pointed at it.
func replay(t testing.TB, exs ...exchange) (*Model, *recorder) {
	t.Helper()
	rec := &recorder{responses: exs}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	m, err := New(&Options{APIKey: "sk-test-secret", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return m, rec
}

// sse returns a 200 event-stream exchange with body.
func sse(body string) exchange {
	return exchange{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}, "Request-Id": {"req_stream"}}, Body: []byte(body)}
}

func simpleRequest() *llm.Request {
	return &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("hi")}}
}

// collect ranges over a stream, returning the chunks and the final error.
func collect(seq func(func(llm.Chunk, error) bool)) ([]llm.Chunk, error) {
	var chunks []llm.Chunk
	for c, err := range seq {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// result is what a golden file holds for one replayed response.
type result struct {
	Message llm.Message      `json:"message"`
	Usage   llm.Usage        `json:"usage"`
	Finish  llm.FinishReason `json:"finish"`
	Chunks  int              `json:"chunks"`
}

func assemble(t testing.TB, chunks []llm.Chunk) result {
	t.Helper()
	var a llm.Assembler
	for i, c := range chunks {
		if _, ok := c.(*llm.Finish); ok && i != len(chunks)-1 {
			t.Errorf("Finish at %d of %d chunks; it must be last", i, len(chunks))
		}
		a.Add(c)
	}
	if !a.Finished() {
		t.Error("stream ended without Finish")
	}
	r := a.Response()
	return result{Message: r.Message, Usage: r.Usage, Finish: r.Finish, Chunks: len(chunks)}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), got)
}

func TestReplayRecordedStreams(t *testing.T) {
	for _, fx := range fixtures {
		exs := fx.load(t, filepath.Join("testdata", fx.file))
		for i, ex := range exs {
			name := fixtureName(fx.name, i)
			t.Run(name, func(t *testing.T) {
				m, _ := replay(t, ex)
				chunks, err := collect(m.Stream(context.Background(), simpleRequest()))
				if err != nil {
					t.Fatal(err)
				}
				r := assemble(t, chunks)
				got, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, name+".json", append(got, '\n'))
			})
		}
	}
}

// The langchaingo trace is a three-step tool loop whose cache reads grow
// as the prefix is reused.
func TestReplayCacheCounters(t *testing.T) {
	exs := loadHTTPRR(t, filepath.Join("testdata", "langchaingo__anthropic_tool_results_caching_streaming.httprr"))
	want := []llm.Usage{
		{Input: 3, Output: 55, CacheRead: 0, CacheWrite: 1881, CacheWrite5m: 1881},
		{Input: 6, Output: 27, CacheRead: 1881, CacheWrite: 72, CacheWrite5m: 72},
		{Input: 3, Output: 55, CacheRead: 1953, CacheWrite: 37, CacheWrite5m: 37},
	}
	if len(exs) != len(want) {
		t.Fatalf("trace has %d exchanges, want %d", len(exs), len(want))
	}
	m, _ := replay(t, exs...)
	for i := range exs {
		chunks, err := collect(m.Stream(context.Background(), simpleRequest()))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		r := assemble(t, chunks)
		if diff := cmp.Diff(want[i], r.Usage); diff != "" {
			t.Errorf("step %d usage (-want +got):\n%s", i, diff)
		}
	}
}

// Replaying the first thinking response and answering its tool call must
// produce the conversation the recorded second request sent: the thinking
// block goes back with its signature, byte for byte.
func TestThinkingSignatureRoundTrip(t *testing.T) {
	exs := loadCassette(t, filepath.Join("testdata", "fantasy__anthropic_thinking_tool_streaming.yaml"))
	m, rec := replay(t, exs...)
	req := &llm.Request{
		Model:     "claude-sonnet-4-20250514",
		System:    []llm.Text{{Text: "You are a helpful assistant"}},
		Messages:  []llm.Message{llm.UserText("What's the weather in Florence, Italy?")},
		MaxTokens: 4096,
		Reasoning: &llm.ReasoningOptions{BudgetTokens: 4000},
		Tools: []llm.ToolSpec{{
			Name:        "weather",
			Description: "Get weather information for a location",
			Schema:      json.RawMessage(`{"properties":{"location":{"description":"the city","type":"string"}},"required":["location"],"type":"object"}`),
		}},
	}
	chunks, err := collect(m.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	first := assemble(t, chunks)
	calls := first.Message.ToolCalls()
	if len(calls) != 1 {
		t.Fatalf("got %d tool calls, want 1", len(calls))
	}
	next := *req
	next.Messages = []llm.Message{
		req.Messages[0],
		first.Message,
		{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: calls[0].ID, Parts: []llm.Part{&llm.Text{Text: "40 C"}}}}},
	}
	if _, err := collect(m.Stream(context.Background(), &next)); err != nil {
		t.Fatal(err)
	}
	var sent, recorded map[string]any
	if err := json.Unmarshal(rec.body(1), &sent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(exs[1].RequestBody), &recorded); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"messages", "system", "thinking", "tools", "max_tokens", "model", "stream"} {
		if diff := cmp.Diff(recorded[key], sent[key]); diff != "" {
			t.Errorf("%s differs from the recorded request (-recorded +sent):\n%s", key, diff)
		}
	}
}

// The cache-control cassette was recorded from a client that marks the
// newest blocks by hand. The same hints on rein's parts must produce the
// conversation, system and tools of both recorded requests.
func TestExplicitCacheHintsMatchRecording(t *testing.T) {
	exs := loadCassette(t, filepath.Join("testdata", "fantasy__anthropic_cache_control_tool_streaming.yaml"))
	m, rec := replay(t, exs...)
	hint := &llm.CacheHint{}
	question := "What's the weather in Florence,Italy?"
	req := &llm.Request{
		Model:     "claude-sonnet-4-20250514",
		System:    []llm.Text{{Text: "You are a helpful assistant", Cache: hint}},
		Messages:  []llm.Message{userText(question, hint)},
		MaxTokens: 4000,
		Tools: []llm.ToolSpec{{
			Name:        "weather",
			Description: "Get weather information for a location",
			Schema:      json.RawMessage(`{"properties":{"location":{"description":"the city","type":"string"}},"required":["location"],"type":"object"}`),
		}},
	}
	chunks, err := collect(m.Stream(context.Background(), req))
	if err != nil {
		t.Fatal(err)
	}
	first := assemble(t, chunks)
	// Move the hints to the newest blocks, as the recording client did.
	answer := first.Message
	answer.Parts = append([]llm.Part(nil), answer.Parts...)
	c := *answer.Parts[len(answer.Parts)-1].(*llm.ToolCall)
	c.Cache = hint
	answer.Parts[len(answer.Parts)-1] = &c
	next := *req
	next.Messages = []llm.Message{
		llm.UserText(question),
		answer,
		{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: c.ID, Cache: hint, Parts: []llm.Part{&llm.Text{Text: "40 C"}}}}},
	}
	if _, err := collect(m.Stream(context.Background(), &next)); err != nil {
		t.Fatal(err)
	}
	for i := range exs {
		var sent, recorded map[string]any
		if err := json.Unmarshal(rec.body(i), &sent); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(exs[i].RequestBody), &recorded); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"messages", "system", "tools", "max_tokens", "model"} {
			if diff := cmp.Diff(recorded[key], sent[key]); diff != "" {
				t.Errorf("request %d: %s differs from the recording (-recorded +sent):\n%s", i, key, diff)
			}
		}
	}
}
