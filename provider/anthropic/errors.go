package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm"
)

// mapError turns a failure of a call into what callers branch on: ctx's
// error when ctx is done, else an *llm.ProviderError. Errors that are
// already final (request building) pass through.
func (m *Model) mapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctxErr {
			return fmt.Errorf("anthropic: %w: %w", ctxErr, cause)
		}
		return fmt.Errorf("anthropic: %w", ctxErr)
	}
	pe := &llm.ProviderError{Provider: m.provider}
	var (
		apiErr *sdk.Error
		se     *streamError
		de     *decodeError
		ne     net.Error
	)
	switch {
	case errors.As(err, &apiErr):
		pe.StatusCode = apiErr.StatusCode
		pe.Code = string(apiErr.Type())
		pe.Message = apiErr.Message
		if resp := apiErr.Response; resp != nil {
			pe.RequestID = resp.Header.Get("request-id")
			pe.RetryAfter = retryAfter(resp.Header, time.Now())
		}
		if pe.RequestID == "" {
			pe.RequestID = apiErr.RequestID
		}
		if pe.Message == "" {
			pe.Message = http.StatusText(apiErr.StatusCode)
		}
		pe.Kind = classify(pe.StatusCode, pe.Code, pe.Message)
	case errors.As(err, &se):
		pe.Code, pe.Message = se.Type, se.Message
		pe.Kind = classify(0, se.Type, se.Message)
	case errors.As(err, &de):
		pe.Kind, pe.Message = llm.ErrTransport, de.Error()
	case errors.Is(err, errNoStop), errors.Is(err, io.ErrUnexpectedEOF):
		pe.Kind, pe.Message, pe.Err = llm.ErrTransport, errNoStop.Error(), err
	case errors.As(err, &ne) && ne.Timeout():
		pe.Kind, pe.Err = llm.ErrTimeout, err
	default:
		// Connection refused, reset, TLS failures, a body cut mid-read.
		pe.Kind, pe.Err = llm.ErrTransport, err
	}
	return pe
}

// classify maps an HTTP status (0 for an error event after HTTP 200), the
// API's error type and its message to an error kind. The message is
// checked first for causes the status does not tell apart.
func classify(status int, typ, msg string) llm.ErrorKind {
	lower := strings.ToLower(msg)
	switch {
	case typ == "billing_error" || status == http.StatusPaymentRequired || containsAny(lower,
		"credit balance", "billing", "spend limit", "spending limit", "usage limit", "purchase credits"):
		return llm.ErrQuota
	case containsAny(lower, "prompt is too long", "context length", "context window",
		"exceed context limit", "exceeds the context", "too many tokens"):
		return llm.ErrContextTooLong
	case typ == "overloaded_error" || status == 529:
		return llm.ErrOverloaded
	case typ == "rate_limit_error" || status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case typ == "authentication_error" || typ == "permission_error" ||
		status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ErrAuth
	case typ == "timeout_error" && status == 0:
		return llm.ErrTimeout
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict ||
		typ == "api_error" || typ == "conflict_error":
		return llm.ErrServer
	case status == 0 && typ != "invalid_request_error" && typ != "not_found_error" && typ != "request_too_large":
		// An unknown error type mid-stream: the server gave up on a
		// request it had accepted.
		return llm.ErrServer
	default:
		return llm.ErrInvalidRequest
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// retryAfter reads retry-after-ms, then retry-after (seconds or an HTTP
// date), as a wait from now; 0 when absent or in the past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
