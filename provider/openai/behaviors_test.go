package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
)

// TestB28_RetryableFailures: 408, 409, 429 without a quota code, 5xx and
// 529 come back retryable, with retry-after read.
func TestB28_RetryableFailures(t *testing.T) {
	for _, status := range []int{408, 409, 429, 500, 502, 503, 504, 529} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(status)
			w.Write([]byte(`{"error":{"message":"try later","type":"server_error"}}`))
		}))
		m := newTestModel(t, "chat", &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
		var got error
		for _, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
			got = err
		}
		srv.Close()
		pe, ok := got.(*llm.ProviderError)
		if !ok || !pe.Retryable() || pe.RetryAfter == 0 {
			t.Errorf("HTTP %d: got %v, want a retryable error with RetryAfter", status, got)
		}
	}
}

// TestB29_QuotaNeverRetried: a quota failure, before or after HTTP 200,
// is not retryable and its message names the cause.
func TestB29_QuotaNeverRetried(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	cases := map[string]struct {
		status int
		body   string
	}{
		"429 insufficient_quota": {429, quota},
		"mid-stream":             {200, "data: " + quota + "\n\n"},
		"402 payment required":   {402, `{"error":{"message":"Insufficient credits"}}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := serve(t, c.status, map[string][]string{"Content-Type": {"text/event-stream"}}, []byte(c.body))
			m := newTestModel(t, "chat", &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
			var got error
			for _, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
				got = err
			}
			if llm.KindOf(got) != llm.ErrQuota || llm.IsRetryable(got) {
				t.Fatalf("got %v, want a non-retryable quota error", got)
			}
			if !strings.Contains(got.Error(), "retrying will not help") {
				t.Errorf("message %q does not say what to do", got.Error())
			}
		})
	}
}

// TestB33_MissingToolCallIDIsStable: a compatible server's call without an
// id assembles to the same synthetic id every time, and that id pairs the
// call with its result in the next request.
func TestB33_MissingToolCallIDIsStable(t *testing.T) {
	body := sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	var ids []llm.CallID
	var msg llm.Message
	for range 2 {
		srv, _ := serve(t, 200, map[string][]string{"Content-Type": {"text/event-stream"}}, body)
		m := newTestModel(t, "chat", &Options{Provider: ProviderOllama, BaseURL: srv.URL + "/v1"})
		var a llm.Assembler
		for c, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
			if err != nil {
				t.Fatal(err)
			}
			a.Add(c)
		}
		msg = a.Message()
		calls := msg.ToolCalls()
		if len(calls) != 1 || calls[0].ID == "" {
			t.Fatalf("calls = %+v, want one with a synthetic id", calls)
		}
		ids = append(ids, calls[0].ID)
	}
	if ids[0] != ids[1] {
		t.Fatalf("synthetic ids differ between identical streams: %q, %q", ids[0], ids[1])
	}
	c, _ := NewChat(&Options{Provider: ProviderOllama})
	b, err := c.RequestBody(&llm.Request{Model: "m", Messages: []llm.Message{
		llm.UserText("read a.go"), msg,
		{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: ids[0], Parts: []llm.Part{&llm.Text{Text: "package a"}}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"`+string(ids[0])+`"`); n != 2 {
		t.Errorf("id %q appears %d times in %s, want in the call and the result", ids[0], n, b)
	}
}
