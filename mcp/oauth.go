package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrLoginRequired is an OAuth server rein holds no usable token for,
// outside an interactive login.
var ErrLoginRequired = errors.New("mcp: the server needs an OAuth login; run 'rein mcp login NAME' (or Manager.Login)")

// DefaultRedirectURL is where the authorization server sends the browser
// back when OAuthConfig.RedirectURL is empty. Login listens there.
const DefaultRedirectURL = "http://127.0.0.1:8765/callback"

// OAuthConfig enables the OAuth authorization-code flow for an HTTP server
// that asks for it (HTTP 401 with a WWW-Authenticate challenge). Tokens are
// kept under Options.StateDir, readable by the owner only, and refreshed
// as needed; obtaining the first one takes an interactive Manager.Login.
type OAuthConfig struct {
	// ClientID and ClientSecret identify a client registered with the
	// authorization server beforehand; an empty ClientID registers rein
	// dynamically.
	ClientID     string
	ClientSecret string
	// RedirectURL must be a loopback http URL with a port (Login listens
	// on it); empty means DefaultRedirectURL.
	RedirectURL string
}

// oauthState is one server's OAuth handler and token file.
type oauthState struct {
	handler *auth.AuthorizationCodeHandler
	path    string
	// login, when set, runs the browser part of an interactive login.
	mu    sync.Mutex
	login func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error)
}

// savedToken is the token file: the token plus what refreshing it needs.
// It holds secrets and is written with mode 0600.
type savedToken struct {
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	AuthURL      string        `json:"auth_url"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style,omitempty"`
	RedirectURL  string        `json:"redirect_url,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
}

func (c *OAuthConfig) redirect() string {
	if c.RedirectURL != "" {
		return c.RedirectURL
	}
	return DefaultRedirectURL
}

// tokenPath is where a server's token lives.
func (m *Manager) tokenPath(server string) (string, error) {
	if m.opts.StateDir == "" {
		return "", fmt.Errorf("mcp: server %q uses OAuth but Options.StateDir is empty; set it so tokens can be kept", server)
	}
	return filepath.Join(m.opts.StateDir, "mcp", "oauth", sanitize(server)+".json"), nil
}

// oauthHandler returns the server's OAuth handler, made once.
func (m *Manager) oauthHandler(s *server) (auth.OAuthHandler, error) {
	m.oauthMu.Lock()
	defer m.oauthMu.Unlock()
	if st := m.oauthFor[s.cfg.Name]; st != nil {
		return st.handler, nil
	}
	path, err := m.tokenPath(s.cfg.Name)
	if err != nil {
		return nil, err
	}
	st := &oauthState{path: path}
	c := s.cfg.OAuth
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         c.redirect(),
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			st.mu.Lock()
			login := st.login
			st.mu.Unlock()
			if login == nil {
				return nil, fmt.Errorf("%w (server %q)", ErrLoginRequired, s.cfg.Name)
			}
			return login(ctx, args.URL)
		},
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			saved := &savedToken{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, AuthURL: oc.Endpoint.AuthURL,
				TokenURL: oc.Endpoint.TokenURL, AuthStyle: int(oc.Endpoint.AuthStyle), RedirectURL: oc.RedirectURL, Scopes: oc.Scopes, Token: tok}
			if err := saveToken(path, saved); err != nil {
				return nil, err
			}
			return &savingSource{src: oc.TokenSource(context.WithoutCancel(ctx), tok), path: path, saved: saved}, nil
		},
	}
	if c.ClientID != "" {
		cred := &oauthex.ClientCredentials{ClientID: c.ClientID}
		if c.ClientSecret != "" {
			cred.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}
		}
		cfg.PreregisteredClient = cred
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              m.clientName,
			RedirectURIs:            []string{c.redirect()},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}}
	}
	if saved, err := loadToken(path); err == nil {
		oc := &oauth2.Config{ClientID: saved.ClientID, ClientSecret: saved.ClientSecret, RedirectURL: saved.RedirectURL, Scopes: saved.Scopes,
			Endpoint: oauth2.Endpoint{AuthURL: saved.AuthURL, TokenURL: saved.TokenURL, AuthStyle: oauth2.AuthStyle(saved.AuthStyle)}}
		cfg.InitialTokenSource = &savingSource{src: oc.TokenSource(context.Background(), saved.Token), path: path, saved: saved}
	} else if !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("mcp: ignoring an unreadable OAuth token file", "server", s.cfg.Name, "err", err)
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: OAuth: %w", s.cfg.Name, err)
	}
	st.handler = h
	m.oauthFor[s.cfg.Name] = st
	return h, nil
}

// savingSource writes refreshed tokens back to the token file.
type savingSource struct {
	mu    sync.Mutex
	src   oauth2.TokenSource
	path  string
	saved *savedToken
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.src.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved.Token == nil || tok.AccessToken != s.saved.Token.AccessToken {
		s.saved.Token = tok
		_ = saveToken(s.path, s.saved) // a failed save costs a login later, not this call
	}
	return tok, nil
}

func loadToken(path string) (*savedToken, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t savedToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.Token == nil {
		return nil, fmt.Errorf("%s: no token", path)
	}
	return &t, nil
}

// saveToken writes the token file atomically, readable by the owner only.
func saveToken(path string, t *savedToken) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// LoginRequest configures Manager.Login.
type LoginRequest struct {
	// Open shows the authorization URL to the person logging in, for
	// example by starting a browser or printing it. Required.
	Open func(ctx context.Context, authURL string) error
	// Timeout bounds the wait for the browser's redirect; zero means 5
	// minutes.
	Timeout time.Duration
}

// Login runs the OAuth authorization-code flow for server interactively:
// it connects, and when the server asks for authorization, opens the
// authorization URL with req.Open and waits for the redirect on the
// config's loopback RedirectURL. The token is saved under StateDir for
// later connections.
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
	if _, err := m.oauthHandler(s); err != nil {
		return err
	}
	m.oauthMu.Lock()
	st := m.oauthFor[server]
	m.oauthMu.Unlock()
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	st.mu.Lock()
	st.login = func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
		return browserLogin(ctx, s.cfg.OAuth.redirect(), authURL, req.Open, timeout)
	}
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.login = nil
		st.mu.Unlock()
	}()
	// A fresh connection attempt, now that a login may happen.
	s.mu.Lock()
	s.failures, s.nextTry = 0, time.Time{}
	s.mu.Unlock()
	if _, err := s.ensure(ctx); err != nil {
		return err
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
