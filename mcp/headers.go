package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/hook"
)

// Hooks returns the handlers a host adds to its agent: a prompt handler
// that evaluates every server's Auth callback for the session at the start
// of each turn. A failing callback fails the turn before the model is
// asked anything. Hooks is nil-safe to add when no server has Auth.
func (m *Manager) Hooks() *hook.Set {
	hs := new(hook.Set)
	if !slices.ContainsFunc(m.servers, func(s *server) bool { return s.cfg.Auth != nil }) {
		return hs
	}
	hs.Prompt("mcp-auth", func(ctx context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
		return nil, m.Authorize(ctx, string(in.Session))
	})
	return hs
}

// Authorize evaluates the Auth callback of every server that has one for
// session, keeping the headers for the session's tool calls until the
// next Authorize. The first failure is returned; the session's calls to
// that server then fail until an Authorize succeeds.
func (m *Manager) Authorize(ctx context.Context, session string) error {
	var errs []error
	for _, s := range m.servers {
		if s.cfg.Auth == nil {
			continue
		}
		h, err := m.evalAuth(ctx, s, session)
		m.authMu.Lock()
		per := m.auth[session]
		if per == nil {
			per = map[string]http.Header{}
			m.auth[session] = per
		}
		if err != nil {
			delete(per, s.cfg.Name)
		} else {
			per[s.cfg.Name] = h
		}
		m.authMu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Forget drops what Authorize kept for session, for example when it ends.
func (m *Manager) Forget(session string) {
	m.authMu.Lock()
	delete(m.auth, session)
	m.authMu.Unlock()
}

// evalAuth calls a server's Auth callback; its error never carries the
// headers.
func (m *Manager) evalAuth(ctx context.Context, s *server, session string) (http.Header, error) {
	h, err := s.cfg.Auth(ctx, &AuthRequest{Server: s.cfg.Name, Session: session})
	if err != nil {
		return nil, fmt.Errorf("mcp: auth for server %q failed: %w", s.cfg.Name, err)
	}
	return h, nil
}

// authHeaders are the connection-level headers of a server with Auth.
func (m *Manager) authHeaders(ctx context.Context, s *server, session string) (http.Header, error) {
	return m.evalAuth(ctx, s, session)
}

// sessionHeaders returns the headers Authorize kept for session, calling
// the callback now when the session has none yet.
func (m *Manager) sessionHeaders(ctx context.Context, s *server, session string) (http.Header, error) {
	m.authMu.Lock()
	h, ok := m.auth[session][s.cfg.Name]
	m.authMu.Unlock()
	if ok {
		return h, nil
	}
	return m.evalAuth(ctx, s, session)
}

// headersKey carries a session's headers to the HTTP transport through a
// request's context.
type headersKey struct{}

// headerTransport adds a connection's headers, the session's headers
// found in the request's context, and the trace context of the request's
// span, to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	server  string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	extra, _ := req.Context().Value(headersKey{}).(http.Header)
	traced := trace.SpanContextFromContext(req.Context()).IsValid()
	if len(t.headers) == 0 && len(extra) == 0 && !traced {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	for k, vs := range t.headers {
		r.Header[k] = vs
	}
	for k, vs := range extra {
		r.Header[http.CanonicalHeaderKey(k)] = vs
	}
	if traced {
		injectTrace(r.Context(), r.Header)
	}
	return t.base.RoundTrip(r)
}
