package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
)

// apiError is the error object OpenAI and compatible servers send, in an
// error response's "error" field or in a stream. Servers disagree on
// types: code may be a string or a number, and Ollama sends the whole
// error as a string.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Param   json.RawMessage `json:"param"`
}

// code returns the error's code as text, "" when absent.
func (e *apiError) code() string {
	c := bytes.TrimSpace(e.Code)
	if len(c) == 0 || string(c) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	return string(c)
}

// parseErrorBody extracts the error from a non-2xx body: {"error": {...}},
// {"error": "text"}, a bare {...} with message, or plain text.
func parseErrorBody(body []byte) apiError {
	body = bytes.TrimSpace(body)
	var wrap struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &wrap) == nil {
		if e := decodeErrorValue(wrap.Error); e.Message != "" || e.Type != "" || len(e.Code) > 0 {
			return e
		}
		if wrap.Message != "" {
			return apiError{Message: wrap.Message}
		}
		if e := decodeErrorValue(wrap.Detail); e.Message != "" {
			return e // vLLM/FastAPI: {"detail": "..."}
		}
	}
	const maxText = 512
	s := string(body)
	if len(s) > maxText {
		s = s[:maxText] + "…"
	}
	return apiError{Message: s}
}

func decodeErrorValue(raw json.RawMessage) apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return apiError{}
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return apiError{Message: s}
	}
	var e apiError
	if json.Unmarshal(raw, &e) != nil {
		return apiError{}
	}
	return e
}

// classify picks the kind of a failure from the HTTP status (0 for an
// in-stream error) and the provider's code, type and message.
func classify(status int, code, typ, msg string) llm.ErrorKind {
	lc := strings.ToLower(code)
	lt := strings.ToLower(typ)
	lm := strings.ToLower(msg)
	switch {
	case lc == "insufficient_quota" || lt == "insufficient_quota" || lc == "billing_hard_limit_reached" ||
		strings.Contains(lm, "exceeded your current quota") || strings.Contains(lm, "insufficient balance") ||
		strings.Contains(lm, "insufficient credits") || status == http.StatusPaymentRequired:
		return llm.ErrQuota
	case isContextTooLong(lc, lm):
		return llm.ErrContextTooLong
	}
	switch {
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case status == http.StatusServiceUnavailable && (strings.Contains(lm, "overloaded") || strings.Contains(lm, "capacity")):
		return llm.ErrOverloaded
	case status == 529:
		return llm.ErrOverloaded
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return llm.ErrServer
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ErrAuth
	case status >= 400:
		return llm.ErrInvalidRequest
	}
	// In-stream: only the code, type and message say what happened.
	switch {
	case lc == "rate_limit_exceeded" || lt == "rate_limit_exceeded" || lt == "rate_limit_error" || lc == "429":
		return llm.ErrRateLimited
	case strings.Contains(lc, "overloaded") || strings.Contains(lt, "overloaded") || strings.Contains(lm, "overloaded"):
		return llm.ErrOverloaded
	case lc == "invalid_api_key" || lt == "authentication_error" || lc == "401" || lc == "403":
		return llm.ErrAuth
	case lt == "invalid_request_error" || lc == "invalid_prompt" || lc == "invalid_request_error" || lc == "400":
		return llm.ErrInvalidRequest
	}
	return llm.ErrServer
}

// isContextTooLong recognises OpenAI's code and the messages of the
// common local servers.
func isContextTooLong(code, msg string) bool {
	if code == "context_length_exceeded" || code == "string_above_max_length" {
		return true
	}
	for _, s := range []string{
		"context_length_exceeded",
		"maximum context length",            // OpenAI, vLLM
		"context length is",                 // vLLM
		"exceeds the available context",     // llama.cpp
		"exceed_context_size",               // llama.cpp
		"exceeds the context size",          // llama.cpp
		"context window",                    // several
		"prompt is too long",                // several
		"input length exceeds",              // Ollama
		"too many tokens",                   // several
		"reduce the length of the messages", // OpenAI, DeepSeek
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// httpError builds the error for a non-2xx response. The body is read in
// full (it is small) and closed.
func httpError(provider string, res *http.Response, cause error) *llm.ProviderError {
	var body []byte
	if res.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
	}
	e := parseErrorBody(body)
	code := e.code()
	pe := &llm.ProviderError{
		Kind:       classify(res.StatusCode, code, e.Type, e.Message),
		Provider:   provider,
		StatusCode: res.StatusCode,
		RequestID:  requestID(res.Header),
		RetryAfter: retryAfter(res.Header, time.Now()),
		Code:       firstNonEmpty(code, e.Type),
		Message:    e.Message,
		Err:        cause,
	}
	if pe.Message == "" {
		pe.Message = http.StatusText(res.StatusCode)
	}
	return pe
}

// streamError builds the error for an error object that arrived after
// HTTP 200.
func streamError(provider, reqID string, e apiError) *llm.ProviderError {
	code := e.code()
	return &llm.ProviderError{
		Kind:      classify(0, code, e.Type, e.Message),
		Provider:  provider,
		RequestID: reqID,
		Code:      firstNonEmpty(code, e.Type),
		Message:   e.Message,
	}
}

// transportError wraps a failure to reach the server or to read the body,
// unless the context ended it, in which case the context's error is the
// answer.
func transportError(ctx context.Context, provider, reqID string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	kind := llm.ErrTransport
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		kind = llm.ErrTimeout
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		// A URL may carry credentials (user:pass@, ?api-key=): keep only
		// scheme, host and path, and drop the *url.Error that has it all.
		msg = ue.Op + " " + redactURL(ue.URL) + ": " + ue.Err.Error()
		err = ue.Err
	}
	return &llm.ProviderError{Kind: kind, Provider: provider, RequestID: reqID, Message: msg, Err: err}
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

func requestID(h http.Header) string {
	for _, k := range []string{"X-Request-Id", "Request-Id", "X-Amzn-Requestid", "Cf-Ray"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// retryAfter reads retry-after-ms (milliseconds, may be fractional) and
// retry-after (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
