package openai

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

func TestHTTPErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   llm.ProviderError
	}{
		{
			name: "quota", status: 429,
			body:   `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			header: map[string]string{"x-request-id": "req_q"},
			want:   llm.ProviderError{Kind: llm.ErrQuota, StatusCode: 429, RequestID: "req_q", Code: "insufficient_quota", Message: "You exceeded your current quota, please check your plan and billing details."},
		},
		{
			name: "rate limited with retry-after-ms", status: 429,
			body:   `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			header: map[string]string{"retry-after-ms": "1500", "retry-after": "2", "x-request-id": "req_r"},
			want:   llm.ProviderError{Kind: llm.ErrRateLimited, StatusCode: 429, RequestID: "req_r", RetryAfter: 1500 * time.Millisecond, Code: "rate_limit_exceeded", Message: "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000."},
		},
		{
			name: "rate limited with retry-after seconds", status: 429,
			body:   `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			header: map[string]string{"retry-after": "20"},
			want:   llm.ProviderError{Kind: llm.ErrRateLimited, StatusCode: 429, RetryAfter: 20 * time.Second, Code: "rate_limit_exceeded", Message: "slow down"},
		},
		{
			name: "server error", status: 500,
			body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 500, Code: "server_error", Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			name: "bad gateway html", status: 502, body: `<html><body>502 Bad Gateway</body></html>`,
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 502, Message: "<html><body>502 Bad Gateway</body></html>"},
		},
		{
			name: "overloaded", status: 503,
			body: `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`,
			want: llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 503, Code: "server_error", Message: "The engine is currently overloaded, please try again later"},
		},
		{
			name: "service unavailable", status: 503, body: ``,
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 503, Message: "Service Unavailable"},
		},
		{
			name: "gateway timeout", status: 504, body: `upstream request timeout`,
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 504, Message: "upstream request timeout"},
		},
		{
			name: "request timeout", status: 408, body: `{"error":{"message":"Request timed out."}}`,
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 408, Message: "Request timed out."},
		},
		{
			name: "conflict", status: 409, body: `{"error":{"message":"conflict"}}`,
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 409, Message: "conflict"},
		},
		{
			name: "bad key", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			want: llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 401, Code: "invalid_api_key", Message: "Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys."},
		},
		{
			name: "forbidden region", status: 403,
			body: `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			want: llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 403, Code: "unsupported_country_region_territory", Message: "Country, region, or territory not supported"},
		},
		{
			name: "openai context length", status: 400,
			body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want: llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Code: "context_length_exceeded", Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."},
		},
		{
			name: "vllm context length", status: 400,
			body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			want: llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."},
		},
		{
			name: "llama.cpp context size", status: 400,
			body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
			want: llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Code: "400", Message: "the request exceeds the available context size, try increasing it"},
		},
		{
			name: "ollama error string", status: 404, body: `{"error":"model \"llama9\" not found, try pulling it first"}`,
			want: llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 404, Message: `model "llama9" not found, try pulling it first`},
		},
		{
			name: "invalid request", status: 400,
			body: `{"error":{"message":"Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.","type":"invalid_request_error","param":"tool_choice","code":null}}`,
			want: llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 400, Code: "invalid_request_error", Message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."},
		},
		{
			name: "deepseek insufficient balance", status: 402, body: `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`,
			want: llm.ProviderError{Kind: llm.ErrQuota, StatusCode: 402, Code: "invalid_request_error", Message: "Insufficient Balance"},
		},
	}
	for _, tt := range tests {
		for _, api := range []string{"chat", "responses"} {
			t.Run(tt.name+"/"+api, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tt.status)
					w.Write([]byte(tt.body))
				}))
				defer srv.Close()
				m := newTestModel(t, api, &Options{APIKey: "sk-secret-key", BaseURL: srv.URL + "/v1"})
				var got error
				n := 0
				for _, err := range m.Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}}) {
					n++
					got = err
				}
				if n != 1 {
					t.Errorf("yielded %d values, want exactly the error", n)
				}
				var pe *llm.ProviderError
				if !errors.As(got, &pe) {
					t.Fatalf("error %v (%T) is not a *llm.ProviderError", got, got)
				}
				want := tt.want
				want.Provider = "openai"
				if diff := cmp.Diff(&want, pe); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s", diff)
				}
				if strings.Contains(pe.Error(), "sk-secret-key") {
					t.Errorf("the API key leaked into the error: %s", pe.Error())
				}
				if want.Kind == llm.ErrQuota && llm.IsRetryable(got) {
					t.Error("a quota error must not be retryable")
				}
			})
		}
	}
}

func TestInStreamErrors(t *testing.T) {
	tests := []struct {
		name string
		api  string
		body string
		kind llm.ErrorKind
		code string
	}{
		{name: "chat error object", api: "chat", kind: llm.ErrServer, code: "server_error",
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n"},
		{name: "chat quota in stream", api: "chat", kind: llm.ErrQuota, code: "insufficient_quota",
			body: "data: {\"error\":{\"message\":\"quota\",\"code\":\"insufficient_quota\"}}\n\n"},
		{name: "chat rate limit in stream", api: "chat", kind: llm.ErrRateLimited, code: "rate_limit_exceeded",
			body: "data: {\"error\":{\"message\":\"too fast\",\"code\":\"rate_limit_exceeded\"}}\n\n"},
		{name: "chat truncated", api: "chat", kind: llm.ErrTransport,
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"},
		{name: "chat malformed json", api: "chat", kind: llm.ErrTransport,
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\n\n"},
		{name: "responses error event top-level", api: "responses", kind: llm.ErrServer, code: "server_error",
			body: "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"},
		{name: "responses failed", api: "responses", kind: llm.ErrContextTooLong, code: "context_length_exceeded",
			body: "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n"},
		{name: "responses truncated", api: "responses", kind: llm.ErrTransport,
			body: "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Hi\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, 200, map[string][]string{"Content-Type": {"text/event-stream"}, "X-Request-Id": {"req_9"}}, []byte(tt.body))
			m := newTestModel(t, tt.api, &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
			var last error
			for _, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
				if last != nil {
					t.Fatal("a value was yielded after the error")
				}
				last = err
			}
			var pe *llm.ProviderError
			if !errors.As(last, &pe) {
				t.Fatalf("last value %v is not a *llm.ProviderError", last)
			}
			if pe.Kind != tt.kind || pe.Code != tt.code || pe.RequestID != "req_9" {
				t.Errorf("got kind %q code %q request %q, want %q %q req_9", pe.Kind, pe.Code, pe.RequestID, tt.kind, tt.code)
			}
		})
	}
}

func TestTransportAndCancel(t *testing.T) {
	// Connection refused: a listener that is closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m := newTestModel(t, "chat", &Options{APIKey: "sk-secret", BaseURL: "http://" + addr + "/v1"})
	var got error
	for _, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
		got = err
	}
	if llm.KindOf(got) != llm.ErrTransport || !llm.IsRetryable(got) {
		t.Errorf("connection refused: got %v, want a retryable transport error", got)
	}
	if strings.Contains(got.Error(), "sk-secret") {
		t.Errorf("key leaked: %v", got)
	}

	// Credentials in the base URL stay out of the error.
	m = newTestModel(t, "chat", &Options{Provider: "gw", BaseURL: "http://user:hunter2@" + addr + "/v1?api-key=hunter2"})
	for _, err := range m.Stream(context.Background(), &llm.Request{Model: "m"}) {
		got = err
	}
	for e := got; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), "hunter2") {
			t.Errorf("credentials leaked: %v", e)
		}
	}
	if llm.KindOf(got) != llm.ErrTransport {
		t.Errorf("got %v, want a transport error", got)
	}

	// Cancelled mid-stream: the context's error, not a ProviderError.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m = newTestModel(t, "chat", &Options{APIKey: "k", BaseURL: srv.URL + "/v1"})
	got = nil
	for c, err := range m.Stream(ctx, &llm.Request{Model: "m"}) {
		if err != nil {
			got = err
			break
		}
		if _, ok := c.(*llm.TextDelta); ok {
			cancel()
		}
	}
	if !errors.Is(got, context.Canceled) {
		t.Errorf("cancelled stream: got %v, want context.Canceled", got)
	}
	var pe *llm.ProviderError
	if errors.As(got, &pe) {
		t.Errorf("cancelled stream gave a ProviderError: %v", pe)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{name: "none", h: http.Header{}, want: 0},
		{name: "ms wins", h: http.Header{"Retry-After-Ms": {"250.5"}, "Retry-After": {"9"}}, want: 250500 * time.Microsecond},
		{name: "seconds", h: http.Header{"Retry-After": {"3"}}, want: 3 * time.Second},
		{name: "http date", h: http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, want: 90 * time.Second},
		{name: "garbage", h: http.Header{"Retry-After": {"soon"}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.h, now); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}
