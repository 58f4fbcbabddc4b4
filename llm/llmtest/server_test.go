package llmtest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/internal/golden"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

const (
	anthropicBody = `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,` +
		`"system":[{"type":"text","text":"Be brief."}],` +
		`"tools":[{"name":"get_weather","description":"Weather for a city.","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"Weather in Paris?"}]}`
	openaiBody = `{"model":"gpt-5-mini","max_completion_tokens":256,"stream":true,"stream_options":{"include_usage":true},` +
		`"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city.","parameters":{"type":"object"}}}],` +
		`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Paris?"}]}`
)

// post sends body to path and returns the status, headers and whole body.
func post(t *testing.T, srv *llmtest.Server, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("reading the body: %v", err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

var unstable = regexp.MustCompile(`"created":\d+`)

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	got = unstable.ReplaceAllString(got, `"created":0`)
	golden.Check(t, filepath.Join("testdata", name), []byte(got))
}

func reasoningAndCall() llmtest.Entry {
	return llmtest.Chunks(
		&llm.BlockStart{Index: 0, Kind: llm.BlockReasoning},
		&llm.ReasoningDelta{Index: 0, Text: "The user wants weather."},
		&llm.ReasoningDelta{Index: 0, Signature: "sig-abc"},
		&llm.BlockEnd{Index: 0},
		&llm.BlockStart{Index: 1, Kind: llm.BlockText},
		&llm.TextDelta{Index: 1, Text: "Checking."},
		&llm.BlockEnd{Index: 1},
		&llm.BlockStart{Index: 2, Kind: llm.BlockToolCall, ID: "call_1", Name: "get_weather"},
		&llm.ToolCallDelta{Index: 2, Args: `{"city":`},
		&llm.ToolCallDelta{Index: 2, Args: `"Paris"}`},
		&llm.BlockEnd{Index: 2},
		&llm.UsageChunk{Usage: llm.Usage{Input: 50, Output: 20, Reasoning: 6, CacheRead: 30}},
		&llm.Finish{Reason: llm.FinishToolCalls},
	)
}

func TestServerWireGolden(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		body  string
		entry llmtest.Entry
		code  int
	}{
		{"anthropic_reply.sse", "/v1/messages", anthropicBody, llmtest.Reply("Sunny."), 200},
		{"anthropic_tools.sse", "/v1/messages", anthropicBody, reasoningAndCall(), 200},
		{"anthropic_fail_after.sse", "/v1/messages", anthropicBody,
			llmtest.FailAfter(&llm.ProviderError{Kind: llm.ErrOverloaded}, &llm.TextDelta{Text: "Sun"}), 200},
		{"anthropic_429.json", "/v1/messages", anthropicBody,
			llmtest.Fail(&llm.ProviderError{Kind: llm.ErrRateLimited, RetryAfter: 3 * time.Second}), 429},
		{"anthropic_quota.json", "/v1/messages", anthropicBody, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrQuota}), 400},
		{"anthropic_too_long.json", "/v1/messages", anthropicBody, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrContextTooLong}), 400},
		{"openai_reply.sse", "/v1/chat/completions", openaiBody, llmtest.Reply("Sunny."), 200},
		{"openai_tools.sse", "/chat/completions", openaiBody, reasoningAndCall(), 200},
		{"openai_fail_after.sse", "/v1/chat/completions", openaiBody,
			llmtest.FailAfter(&llm.ProviderError{Kind: llm.ErrServer}, &llm.TextDelta{Text: "Sun"}), 200},
		{"openai_overloaded.json", "/v1/chat/completions", openaiBody,
			llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, RetryAfter: 1500 * time.Millisecond}), 503},
		{"openai_quota.json", "/v1/chat/completions", openaiBody, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrQuota}), 429},
		{"openai_too_long.json", "/v1/chat/completions", openaiBody, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrContextTooLong}), 400},
		{"openai_auth.json", "/v1/chat/completions", openaiBody, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrAuth}), 401},
		{"anthropic_whole.json", "/v1/messages", strings.Replace(anthropicBody, `"stream":true,`, "", 1), reasoningAndCall(), 200},
		{"openai_whole.json", "/v1/chat/completions", strings.Replace(openaiBody, `"stream":true,`, "", 1), reasoningAndCall(), 200},
		{"openai_whole_fail_after.json", "/v1/chat/completions", strings.Replace(openaiBody, `"stream":true,`, "", 1),
			llmtest.FailAfter(&llm.ProviderError{Kind: llm.ErrRateLimited, RetryAfter: time.Second}, &llm.TextDelta{Text: "Sun"}), 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.NewModel(tt.entry))
			code, h, body := post(t, srv, tt.path, tt.body)
			if code != tt.code {
				t.Errorf("status = %d, want %d; body %s", code, tt.code, body)
			}
			var hdr strings.Builder
			for _, k := range []string{"Content-Type", "Retry-After", "Retry-After-Ms", "Request-Id", "X-Request-Id"} {
				if v := h.Get(k); v != "" {
					fmt.Fprintf(&hdr, "%s: %s\n", k, v)
				}
			}
			checkGolden(t, tt.name, hdr.String()+"\n"+body)
		})
	}
}

func TestServerDecodesRequests(t *testing.T) {
	wantSystem := []llm.Text{{Text: "Be brief."}}
	for _, tt := range []struct{ name, path, body string }{
		{"anthropic", "/v1/messages", anthropicBody},
		{"openai", "/v1/chat/completions", openaiBody},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.NewModel(llmtest.Reply("ok"))
			srv := llmtest.NewServer(t, m)
			post(t, srv, tt.path, tt.body)
			reqs := m.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if diff := cmp.Diff(wantSystem, r.System); diff != "" {
				t.Errorf("system (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]llm.Message{llm.UserText("Weather in Paris?")}, r.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if len(r.Tools) != 1 || r.Tools[0].Name != "get_weather" || string(r.Tools[0].Schema) != `{"type":"object"}` {
				t.Errorf("tools = %+v", r.Tools)
			}
			if r.MaxTokens != 256 {
				t.Errorf("max tokens = %d, want 256", r.MaxTokens)
			}
			raw := srv.Requests()
			if len(raw) != 1 || string(raw[0].Body) != tt.body || raw[0].Path != tt.path {
				t.Errorf("raw requests = %+v", raw)
			}
		})
	}
}

func TestServerDecodesConversation(t *testing.T) {
	want := []llm.Message{
		llm.UserText("Weather?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			&llm.Text{Text: "Checking."},
			&llm.ToolCall{ID: "c1", Name: "get_weather", Args: []byte(`{"city":"Paris"}`)},
			&llm.ToolCall{ID: "c2", Name: "get_time", Args: []byte(`{}`)},
		}},
		{Role: llm.RoleUser, Parts: []llm.Part{
			&llm.ToolResult{CallID: "c1", Parts: []llm.Part{&llm.Text{Text: "sunny"}}},
			&llm.ToolResult{CallID: "c2", Parts: []llm.Part{&llm.Text{Text: "noon"}}, IsError: true},
		}},
	}
	anthropic := `{"model":"m","max_tokens":10,"stream":true,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"Weather?"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"c2","name":"get_time","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"sunny"},{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"noon"}],"is_error":true}]}]}`
	openai := `{"model":"m","stream":true,"messages":[` +
		`{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":"Checking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"sunny"},` +
		`{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"noon"}]}]}`
	for _, tt := range []struct{ name, path, body string }{
		{"anthropic", "/v1/messages", anthropic},
		{"openai", "/v1/chat/completions", openai},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.NewModel(llmtest.Reply("ok"))
			srv := llmtest.NewServer(t, m)
			post(t, srv, tt.path, tt.body)
			if m.Calls() != 1 {
				t.Fatalf("model got %d calls; raw: %+v", m.Calls(), srv.Requests())
			}
			got := m.Requests()[0].Messages
			w := want
			if tt.name == "openai" { // OpenAI tool messages carry no error flag
				w = llm.CloneMessages(want)
				w[2].Parts[1].(*llm.ToolResult).IsError = false
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerBadRequests(t *testing.T) {
	for _, tt := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"unknown path", "/v2/complete", `{}`, 404, "no endpoint"},
		{"not json", "/v1/messages", `{`, 400, "cannot decode"},
		{"no max tokens", "/v1/messages", `{"model":"m","stream":true,"messages":[]}`, 400, "max_tokens"},
		{"exhausted", "/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 500, "script exhausted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.NewModel())
			code, _, body := post(t, srv, tt.path, tt.body)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("got %d %s, want %d containing %q", code, body, tt.code, tt.want)
			}
		})
	}
}

func TestServerCutDropsConnection(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Cut(&llm.TextDelta{Text: "dropped mid-"})))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(anthropicBody))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("read the whole body without error, want a truncated stream; body:\n%s", b)
	}
	if !bytes.Contains(b, []byte("dropped mid-")) || bytes.Contains(b, []byte("message_stop")) {
		t.Errorf("body before the cut:\n%s", b)
	}
}

func TestServerCloseEndsHangingResponse(t *testing.T) {
	m := llmtest.NewModel(llmtest.Hang())
	srv := llmtest.NewServer(t, m)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(anthropicBody))
		resp, err := srv.Client().Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	// The request is at the handler once the model behind it is called.
	if !testwait.For(5*time.Second, func() bool { return m.Calls() == 1 }) {
		t.Fatal("the request never reached the server's model")
	}
	start := time.Now()
	srv.Close()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the hanging request did not end after Close")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
}
