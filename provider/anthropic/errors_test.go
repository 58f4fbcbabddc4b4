package anthropic

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/reinhq/rein/llm"
)

func errorBody(typ, msg string) []byte {
	return []byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_body"}`)
}

func httpError(status int, typ, msg string, kv ...string) exchange {
	h := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_123"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return exchange{Status: status, Header: h, Body: errorBody(typ, msg)}
}

const streamHead = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":12,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

`

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		ex         exchange
		want       llm.ProviderError
		wantChunks int // chunks before the error
	}{
		{
			name: "429 rate limit with retry-after seconds",
			ex:   httpError(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", "Retry-After", "30"),
			want: llm.ProviderError{Kind: llm.ErrRateLimited, StatusCode: 429, RequestID: "req_123", RetryAfter: 30 * time.Second,
				Code: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit"},
		},
		{
			name: "429 with retry-after-ms",
			ex:   httpError(429, "rate_limit_error", "slow down", "Retry-After-Ms", "1500", "Retry-After", "2"),
			want: llm.ProviderError{Kind: llm.ErrRateLimited, StatusCode: 429, RequestID: "req_123", RetryAfter: 1500 * time.Millisecond,
				Code: "rate_limit_error", Message: "slow down"},
		},
		{
			name: "529 overloaded",
			ex:   httpError(529, "overloaded_error", "Overloaded"),
			want: llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529, RequestID: "req_123", Code: "overloaded_error", Message: "Overloaded"},
		},
		{
			name: "500 api error",
			ex:   httpError(500, "api_error", "Internal server error"),
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 500, RequestID: "req_123", Code: "api_error", Message: "Internal server error"},
		},
		{
			name: "502 html from a proxy",
			ex:   exchange{Status: 502, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<html>Bad Gateway</html>")},
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 502, Message: "Bad Gateway"},
		},
		{
			name: "408 request timeout",
			ex:   httpError(408, "timeout_error", "Request timed out"),
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 408, RequestID: "req_123", Code: "timeout_error", Message: "Request timed out"},
		},
		{
			name: "409 conflict",
			ex:   httpError(409, "conflict_error", "Conflict"),
			want: llm.ProviderError{Kind: llm.ErrServer, StatusCode: 409, RequestID: "req_123", Code: "conflict_error", Message: "Conflict"},
		},
		{
			name: "401 bad key",
			ex:   httpError(401, "authentication_error", "invalid x-api-key"),
			want: llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 401, RequestID: "req_123", Code: "authentication_error", Message: "invalid x-api-key"},
		},
		{
			name: "403 permission",
			ex:   httpError(403, "permission_error", "Your API key does not have permission to use the specified resource."),
			want: llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 403, RequestID: "req_123", Code: "permission_error",
				Message: "Your API key does not have permission to use the specified resource."},
		},
		{
			name: "400 prompt too long",
			ex:   httpError(400, "invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"),
			want: llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, RequestID: "req_123", Code: "invalid_request_error",
				Message: "prompt is too long: 212345 tokens > 200000 maximum"},
		},
		{
			name: "400 input and max_tokens exceed context",
			ex:   httpError(400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again"),
			want: llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, RequestID: "req_123", Code: "invalid_request_error",
				Message: "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again"},
		},
		{
			name: "400 credit balance",
			ex:   httpError(400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."),
			want: llm.ProviderError{Kind: llm.ErrQuota, StatusCode: 400, RequestID: "req_123", Code: "invalid_request_error",
				Message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},
		},
		{
			name: "400 usage limit",
			ex:   httpError(400, "invalid_request_error", "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."),
			want: llm.ProviderError{Kind: llm.ErrQuota, StatusCode: 400, RequestID: "req_123", Code: "invalid_request_error",
				Message: "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."},
		},
		{
			name: "402 billing error",
			ex:   httpError(402, "billing_error", "Payment required"),
			want: llm.ProviderError{Kind: llm.ErrQuota, StatusCode: 402, RequestID: "req_123", Code: "billing_error", Message: "Payment required"},
		},
		{
			name: "400 invalid request",
			ex:   httpError(400, "invalid_request_error", "messages.1.content.0: unexpected tool_use_id"),
			want: llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 400, RequestID: "req_123", Code: "invalid_request_error",
				Message: "messages.1.content.0: unexpected tool_use_id"},
		},
		{
			name: "404 unknown model",
			ex:   httpError(404, "not_found_error", "model: claude-nope"),
			want: llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 404, RequestID: "req_123", Code: "not_found_error", Message: "model: claude-nope"},
		},
		{
			name: "413 too large",
			ex:   httpError(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
			want: llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 413, RequestID: "req_123", Code: "request_too_large",
				Message: "Request exceeds the maximum allowed number of bytes."},
		},
		{
			name: "422 unprocessable",
			ex:   httpError(422, "invalid_request_error", "bad"),
			want: llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 422, RequestID: "req_123", Code: "invalid_request_error", Message: "bad"},
		},
		{
			name: "overloaded after 200",
			ex: sse(streamHead + `event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

`),
			want:       llm.ProviderError{Kind: llm.ErrOverloaded, RequestID: "req_stream", Code: "overloaded_error", Message: "Overloaded"},
			wantChunks: 3,
		},
		{
			name: "invalid request after 200",
			ex: sse(streamHead + `event: error
data: {"type":"error","error":{"type":"invalid_request_error","message":"bad thing"}}

`),
			want:       llm.ProviderError{Kind: llm.ErrInvalidRequest, RequestID: "req_stream", Code: "invalid_request_error", Message: "bad thing"},
			wantChunks: 3,
		},
		{
			name: "untyped error event after 200",
			ex: sse(streamHead + `event: error
data: {"error":{"type":"api_error","message":"Internal server error"}}

`),
			want:       llm.ProviderError{Kind: llm.ErrServer, RequestID: "req_stream", Code: "api_error", Message: "Internal server error"},
			wantChunks: 3,
		},
		{
			name:       "truncated stream",
			ex:         sse(streamHead),
			want:       llm.ProviderError{Kind: llm.ErrTransport, RequestID: "req_stream", Message: "stream ended before message_stop"},
			wantChunks: 3,
		},
		{
			name:       "cut mid-line",
			ex:         sse(streamHead + `data: {"type":"content_block_del`),
			want:       llm.ProviderError{Kind: llm.ErrTransport, RequestID: "req_stream", Message: "stream ended before message_stop"},
			wantChunks: 3,
		},
		{
			name:       "malformed event",
			ex:         sse(streamHead + "data: {not json}\n\n"),
			want:       llm.ProviderError{Kind: llm.ErrTransport, RequestID: "req_stream", Message: "malformed stream event: invalid character 'n' looking for beginning of object key string"},
			wantChunks: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := replay(t, tt.ex)
			chunks, err := collect(m.Stream(context.Background(), simpleRequest()))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
			}
			want := tt.want
			want.Provider = "anthropic"
			if diff := cmp.Diff(&want, pe, cmpopts.IgnoreFields(llm.ProviderError{}, "Err")); diff != "" {
				t.Errorf("ProviderError (-want +got):\n%s", diff)
			}
			if len(chunks) != tt.wantChunks {
				t.Errorf("%d chunks before the error, want %d", len(chunks), tt.wantChunks)
			}
			if strings.Contains(err.Error(), "sk-test-secret") || strings.Contains(pe.Message, "sk-test-secret") {
				t.Errorf("error leaks the API key: %v", err)
			}
		})
	}
}

func TestErrorTransport(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		m, err := New(&Options{APIKey: "sk-test-secret", BaseURL: "http://" + addr})
		if err != nil {
			t.Fatal(err)
		}
		_, err = collect(m.Stream(context.Background(), simpleRequest()))
		if k := llm.KindOf(err); k != llm.ErrTransport {
			t.Fatalf("kind %q (%v), want transport", k, err)
		}
		if !llm.IsRetryable(err) {
			t.Error("a refused connection should be retryable")
		}
		if strings.Contains(err.Error(), "sk-test-secret") {
			t.Errorf("error leaks the API key: %v", err)
		}
	})
	t.Run("connection dropped mid-stream", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.Write([]byte(streamHead))
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		m, err := New(&Options{APIKey: "test", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := collect(m.Stream(context.Background(), simpleRequest()))
		if k := llm.KindOf(err); k != llm.ErrTransport {
			t.Fatalf("kind %q (%v), want transport", k, err)
		}
		if len(chunks) != 3 {
			t.Errorf("%d chunks before the drop, want 3", len(chunks))
		}
	})
	t.Run("client timeout", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}))
		defer srv.Close()
		m, err := New(&Options{APIKey: "test", BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = collect(m.Stream(context.Background(), simpleRequest()))
		if k := llm.KindOf(err); k != llm.ErrTimeout {
			t.Fatalf("kind %q (%v), want timeout", k, err)
		}
	})
}

func TestCancelledContext(t *testing.T) {
	m, rec := replay(t, sse(okStream))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := collect(m.Stream(ctx, simpleRequest()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v does not wrap context.Canceled", err)
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		t.Errorf("cancellation reported as a provider error: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) != 0 {
		t.Errorf("a request was sent after cancel")
	}
}

// A cause given to the cancel is kept next to context.Canceled.
func TestCancelCause(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(streamHead))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		close(gone)
	}))
	defer srv.Close()
	m, err := New(&Options{APIKey: "test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	why := errors.New("user pressed escape")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	chunks := 0
	for _, err = range m.Stream(ctx, simpleRequest()) {
		if err != nil {
			break
		}
		if chunks++; chunks == 2 {
			cancel(why)
		}
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, why) {
		t.Fatalf("error %v should wrap context.Canceled and the cause", err)
	}
	if llm.KindOf(err) != "" {
		t.Errorf("cancellation reported as a provider error: %v", err)
	}
	<-gone
}

// A server that sends a tool's whole input in content_block_start, with no
// deltas, still yields the arguments; the API's usual {} does not.
func TestToolInputAtBlockStart(t *testing.T) {
	body := `data: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}

data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"weather","input":{"location":"Oslo"}}}

data: {"type":"content_block_stop","index":0}

data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t2","name":"weather","input":{}}}

data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":\"Rome\"}"}}

data: {"type":"content_block_stop","index":1}

data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}

data: {"type":"message_stop"}

`
	m, _ := replay(t, sse(body))
	chunks, err := collect(m.Stream(context.Background(), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	r := assemble(t, chunks)
	var got []string
	for _, c := range r.Message.ToolCalls() {
		got = append(got, string(c.ID)+" "+string(c.Args))
	}
	want := []string{`t1 {"location":"Oslo"}`, `t2 {"location":"Rome"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if r.Finish != llm.FinishToolCalls {
		t.Errorf("finish %q, want tool-calls", r.Finish)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {"Sun, 29 Nov 2026 12:00:42 GMT"}}, 42 * time.Second},
		{"date in the past", http.Header{"Retry-After": {"Sun, 29 Nov 2026 11:00:00 GMT"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.h, now); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewOptions(t *testing.T) {
	t.Run("missing key names the variable", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "")
		_, err := New(nil)
		if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
			t.Fatalf("New(nil) error = %v, want ErrNoAPIKey naming ANTHROPIC_API_KEY", err)
		}
	})
	t.Run("environment and headers", func(t *testing.T) {
		rec := &recorder{responses: []exchange{sse(okStream)}}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
		t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
		m, err := New(&Options{Headers: map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := collect(m.Stream(context.Background(), simpleRequest())); err != nil {
			t.Fatal(err)
		}
		h := rec.headers[0]
		// The SDK sends the key as a bearer token and sets the API version.
		got := map[string]string{
			"authorization":  h.Get("Authorization"),
			"anthropic-beta": h.Get("Anthropic-Beta"),
		}
		want := map[string]string{"authorization": "Bearer sk-from-env", "anthropic-beta": "interleaved-thinking-2025-05-14"}
		if h.Get("Anthropic-Version") == "" {
			t.Error("no anthropic-version header sent")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request headers (-want +got):\n%s", diff)
		}
	})
}

// Breaking out of the range loop must close the body, which the server
// sees as the client going away.
func TestBreakClosesBody(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(streamHead))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	m, err := New(&Options{APIKey: "test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range m.Stream(context.Background(), simpleRequest()) {
		break
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still holds the stream after the loop broke")
	}
}
