package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

func TestProviderErrorKinds(t *testing.T) {
	tests := []struct {
		kind      llm.ErrorKind
		retryable bool
		advice    string
	}{
		{llm.ErrRateLimited, true, ""},
		{llm.ErrOverloaded, true, ""},
		{llm.ErrServer, true, ""},
		{llm.ErrTimeout, true, ""},
		{llm.ErrTransport, true, ""},
		{llm.ErrContextTooLong, false, "shorten the conversation"},
		{llm.ErrQuota, false, "retrying will not help"},
		{llm.ErrAuth, false, "check the API key"},
		{llm.ErrInvalidRequest, false, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			pe := &llm.ProviderError{Kind: tt.kind, Provider: "anthropic", StatusCode: 400, RequestID: "req_1", Message: "said no"}
			if pe.Retryable() != tt.retryable {
				t.Errorf("Retryable() = %v, want %v", pe.Retryable(), tt.retryable)
			}
			wrapped := fmt.Errorf("step 3: %w", pe)
			if llm.IsRetryable(wrapped) != tt.retryable {
				t.Errorf("IsRetryable(wrapped) = %v, want %v", llm.IsRetryable(wrapped), tt.retryable)
			}
			if llm.KindOf(wrapped) != tt.kind {
				t.Errorf("KindOf = %q, want %q", llm.KindOf(wrapped), tt.kind)
			}
			msg := pe.Error()
			for _, want := range []string{"anthropic", string(tt.kind), "HTTP 400", "said no", "req_1", tt.advice} {
				if !strings.Contains(msg, want) {
					t.Errorf("Error() = %q, want it to contain %q", msg, want)
				}
			}
		})
	}
	if llm.IsRetryable(errors.New("plain")) || llm.KindOf(errors.New("plain")) != "" {
		t.Error("a plain error is classified")
	}
}

func TestProviderErrorUnwrapAndFallbackMessage(t *testing.T) {
	pe := &llm.ProviderError{Kind: llm.ErrTimeout, Provider: "openai", Err: context.DeadlineExceeded}
	if !errors.Is(pe, context.DeadlineExceeded) {
		t.Error("errors.Is does not see the wrapped error")
	}
	if want := "openai: timeout: context deadline exceeded"; pe.Error() != want {
		t.Errorf("Error() = %q, want %q", pe.Error(), want)
	}
	pe = &llm.ProviderError{Kind: llm.ErrRateLimited, Provider: "p", RetryAfter: time.Second}
	if pe.Error() != "p: rate-limited" {
		t.Errorf("Error() = %q", pe.Error())
	}
}

func TestProviderErrorNeverShowsKeys(t *testing.T) {
	secrets := []string{
		"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		"sk-proj-AbCdEfGhIjKlMnOp_qrstuvwx-yz",
		"sk-abc123def456ghi789",
		"AIzaSyD-secretGoogleKey123456",
	}
	carriers := []string{
		"Incorrect API key provided: %s. You can find your API key at ...",
		`request failed: POST https://api.example.com: header "Authorization: Bearer %s"`,
		`x-api-key: %s rejected`,
		`{"api_key": "%s"}`,
		"GET https://example.com/v1/models?key=%s: 401",
	}
	for _, secret := range secrets {
		for _, carrier := range carriers {
			text := fmt.Sprintf(carrier, secret)
			for _, pe := range []*llm.ProviderError{
				{Kind: llm.ErrAuth, Provider: "p", StatusCode: 401, Message: text},
				{Kind: llm.ErrTransport, Provider: "p", Err: errors.New(text)},
			} {
				if msg := pe.Error(); strings.Contains(msg, secret) || strings.Contains(msg, secret[:12]) {
					t.Errorf("Error() leaks the key: %q", msg)
				}
			}
		}
	}
	if got := llm.Redact("nothing secret here: check the API key"); got != "nothing secret here: check the API key" {
		t.Errorf("Redact changed plain text: %q", got)
	}
}

func TestProviderErrorSaysToCheckTheServer(t *testing.T) {
	e := &llm.ProviderError{Kind: llm.ErrTransport, Provider: "ollama", Err: errors.New("dial tcp 127.0.0.1:11434: connect: connection refused")}
	if !strings.Contains(e.Error(), "is the server running") {
		t.Errorf("Error() = %q; want a hint to check the server", e.Error())
	}
	e = &llm.ProviderError{Kind: llm.ErrTransport, Provider: "anthropic", Err: errors.New("stream ended before message_stop")}
	if strings.Contains(e.Error(), "is the server running") {
		t.Errorf("Error() = %q; the hint is only for refused connections", e.Error())
	}
}
