package llm

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ErrorKind classifies a provider failure for retry and fallback policy.
type ErrorKind string

// Provider error kinds.
const (
	ErrRateLimited    ErrorKind = "rate-limited"     // 429 without a quota code
	ErrOverloaded     ErrorKind = "overloaded"       // 529, "overloaded_error"
	ErrServer         ErrorKind = "server"           // 5xx, 408, 409
	ErrTimeout        ErrorKind = "timeout"          // the request timed out
	ErrTransport      ErrorKind = "transport"        // connection refused, reset, stream cut
	ErrContextTooLong ErrorKind = "context-too-long" // the prompt does not fit the window
	ErrQuota          ErrorKind = "quota"            // out of credit or over a spend cap
	ErrAuth           ErrorKind = "auth"             // bad or missing key, no permission
	ErrInvalidRequest ErrorKind = "invalid"          // the provider rejected the request
)

// ProviderError is a failure reported by, or on the way to, a provider.
// It may arrive before any chunk or, after HTTP 200, in mid-stream.
type ProviderError struct {
	Kind       ErrorKind
	Provider   string
	StatusCode int           // 0 when no HTTP status applies
	RequestID  string        // the provider's request id, when sent
	RetryAfter time.Duration // from retry-after headers; 0 when absent
	Code       string        // the provider's own error type or code
	Message    string        // the provider's message
	Err        error         // the underlying error, if any
}

// Error says what failed and, where it can, what to do about it.
func (e *ProviderError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	s := fmt.Sprintf("%s: %s", e.Provider, e.Kind)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if msg != "" {
		s += ": " + msg
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	s = Redact(s)
	switch e.Kind {
	case ErrAuth:
		s += "; check the API key"
	case ErrQuota:
		s += "; add credit or raise the spend limit, retrying will not help"
	case ErrContextTooLong:
		s += "; shorten the conversation or compact it"
	case ErrTransport:
		if e.StatusCode == 0 && strings.Contains(s, "connection refused") {
			s += "; is the server running at that address? (check --base-url)"
		}
	}
	return s
}

// secretPatterns match credentials a provider or transport may echo back
// in an error: API keys by their well-known prefixes, bearer tokens, and
// key headers or parameters.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\bsk-[A-Za-z0-9_*\-]{6,}`),
	regexp.MustCompile(`\bAIza[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`(?i)\b(api key provided:\s*)[^\s.,;]{4,}`),
	regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/*\-]{6,}=*`),
	regexp.MustCompile(`(?i)\b((?:x-)?(?:api|goog-api)[-_]?key["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}`),
	regexp.MustCompile(`(?i)\b((?:access_token|token|key)=)[^\s"',;&]{8,}`),
}

// Redact replaces credentials found in s (API keys such as sk-…, bearer
// tokens, api-key headers and key query parameters) with "[redacted]".
// ProviderError.Error applies it; use it on anything else that may carry a
// provider's text into a log.
func Redact(s string) string {
	for _, re := range secretPatterns {
		if re.NumSubexp() == 0 {
			s = re.ReplaceAllString(s, "[redacted]")
		} else {
			s = re.ReplaceAllString(s, "${1}[redacted]")
		}
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable reports whether sending the same request again may succeed.
func (e *ProviderError) Retryable() bool {
	switch e.Kind {
	case ErrRateLimited, ErrOverloaded, ErrServer, ErrTimeout, ErrTransport:
		return true
	}
	return false
}

// IsRetryable reports whether err is, or wraps, a retryable *ProviderError.
func IsRetryable(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Retryable()
}

// KindOf returns the kind of the *ProviderError in err's chain, or "".
func KindOf(err error) ErrorKind {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return ""
}
