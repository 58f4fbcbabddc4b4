package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// LoginRequest configures Manager.Login.
type LoginRequest struct {
	// Open shows the authorization URL to the person logging in, for
	// example by starting a browser or printing it. Required.
	Open func(ctx context.Context, authURL string) error
	// Timeout bounds the wait for the browser's redirect; zero means 5
	// minutes.
	Timeout time.Duration
}

// loginTimeout bounds the wait for a browser's redirect by default.
const loginTimeout = 5 * time.Minute

// Login runs the OAuth authorization-code flow for server interactively,
// even when a token is stored: it connects (or pings an open connection)
// without the stored token, and when the server asks for authorization,
// opens the authorization URL with req.Open and waits for the redirect on
// the config's loopback RedirectURL. It also requests the wider scopes a
// server asked for since the last login. The token is saved under
// StateDir for later connections.
func (m *Manager) Login(ctx context.Context, server string, req *LoginRequest) error {
	s, err := m.server(server)
	if err != nil {
		return err
	}
	if s.cfg.OAuth == nil {
		return fmt.Errorf("mcp: server %q has no OAuth configuration; add one to log in", server)
	}
	if req == nil || req.Open == nil {
		return errors.New("mcp: Login needs LoginRequest.Open to show the authorization URL")
	}
	st, err := m.loginState(s)
	if err != nil {
		return err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = loginTimeout
	}
	st.mu.Lock()
	st.fresh = true
	st.login = func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
		return browserLogin(ctx, s.cfg.OAuth.redirect(), authURL, req.Open, timeout)
	}
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.login, st.fresh = nil, false
		st.mu.Unlock()
	}()
	// A fresh connection attempt, now that a login may happen.
	s.mu.Lock()
	s.failures, s.nextTry = 0, time.Time{}
	s.mu.Unlock()
	cs, err := s.ensure(ctx)
	if err != nil {
		return err
	}
	st.mu.Lock()
	pending := st.fresh
	st.mu.Unlock()
	if pending { // connected before: a request without the token logs in
		if err := cs.Ping(ctx, nil); err != nil {
			return fmt.Errorf("mcp: server %q: login: %w", server, err)
		}
	}
	return nil
}

// browserLogin shows authURL and waits on redirect for the code.
func browserLogin(ctx context.Context, redirect, authURL string, open func(context.Context, string) error, timeout time.Duration) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		return nil, fmt.Errorf("mcp: OAuth redirect URL %q must be a loopback http URL with a port", redirect)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("mcp: OAuth redirect URL %q must be on the loopback interface", redirect)
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("mcp: listening for the OAuth redirect on %s: %w", u.Host, err)
	}
	got := make(chan *auth.AuthorizationResult, 1)
	failed := make(chan error, 1)
	mux := http.NewServeMux()
	path := u.Path
	if path == "" {
		path = "/"
	}
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			msg := e
			if d := q.Get("error_description"); d != "" {
				msg += ": " + d
			}
			http.Error(w, "Login failed: "+html.EscapeString(msg), http.StatusBadRequest)
			select {
			case failed <- fmt.Errorf("mcp: the authorization server refused: %s", msg):
			default:
			}
			return
		}
		fmt.Fprintln(w, "rein is logged in. You can close this window.")
		select {
		case got <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	if err := open(ctx, authURL); err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-got:
		return r, nil
	case err := <-failed:
		return nil, err
	case <-t.C:
		return nil, fmt.Errorf("mcp: no OAuth redirect within %s; run the login again", timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
