package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrLoginRequired is an OAuth server rein holds no usable token for,
// outside an interactive login.
var ErrLoginRequired = errors.New("mcp: the server needs an OAuth login; run 'rein mcp login NAME' (or Manager.Login)")

// DefaultRedirectURL is where the authorization server sends the browser
// back when OAuthConfig.RedirectURL is empty. Login listens there.
const DefaultRedirectURL = "http://127.0.0.1:8765/callback"

// OAuth grants an OAuthConfig may use.
const (
	// GrantAuthorizationCode is a person logging in through a browser
	// (with PKCE); the default.
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials is a service authenticating as itself with a
	// pre-registered client id and secret; no browser, nothing stored.
	GrantClientCredentials = "client_credentials"
	// GrantCrossApp is enterprise-managed authorization: the ID token of
	// the person's enterprise identity provider (OAuthConfig.IdP) is
	// exchanged for access, with no browser and no consent screen.
	GrantCrossApp = "cross_app"
)

// OAuthConfig enables OAuth for an HTTP server that asks for it (HTTP 401
// with a WWW-Authenticate challenge, or 403 insufficient_scope for a
// wider scope). With the authorization-code grant, tokens are kept under
// Options.StateDir, readable by the owner only, bound to the server's
// URL, and refreshed as needed; obtaining one takes Manager.Login (or
// Options.OpenAuthURL, which logs in on demand).
type OAuthConfig struct {
	// Grant is GrantAuthorizationCode (when empty) or
	// GrantClientCredentials.
	Grant string
	// ClientID and ClientSecret identify a client registered with the
	// authorization server beforehand. Without them rein uses its client
	// ID metadata document (ClientMetadataURL) where the server supports
	// those, and registers itself dynamically otherwise.
	ClientID     string
	ClientSecret string
	// PrivateKeyPEM, with the client-credentials grant, authenticates the
	// client with a signed assertion (private_key_jwt) instead of a
	// secret: a PEM EC P-256 or RSA private key.
	PrivateKeyPEM string
	// ClientMetadataURL is the https URL of a client ID metadata document
	// describing rein, used as the client id by authorization servers that
	// support such documents.
	ClientMetadataURL string
	// RedirectURL must be a loopback http URL with a port (Login listens
	// on it); empty means DefaultRedirectURL.
	RedirectURL string
	// IdP is the identity provider of GrantCrossApp.
	IdP *IdentityProvider
}

func (c *OAuthConfig) redirect() string {
	if c.RedirectURL != "" {
		return c.RedirectURL
	}
	return DefaultRedirectURL
}

func (c *OAuthConfig) validate(server string) error {
	switch c.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if c.ClientID == "" || (c.ClientSecret == "") == (c.PrivateKeyPEM == "") {
			return fmt.Errorf("%w: server %q: the client_credentials grant needs a client id and either a secret or a private key", ErrConfig, server)
		}
	case GrantCrossApp:
		if c.ClientID == "" || c.IdP == nil || c.IdP.Issuer == "" || c.IdP.ClientID == "" || c.IdP.IDToken == nil {
			return fmt.Errorf("%w: server %q: the cross_app grant needs a client id and an identity provider with an issuer, a client id and a way to get the ID token", ErrConfig, server)
		}
	default:
		return fmt.Errorf("%w: server %q: OAuth grant %q: use %s, %s or %s", ErrConfig, server, c.Grant, GrantAuthorizationCode, GrantClientCredentials, GrantCrossApp)
	}
	return nil
}

// oauthState is one server's OAuth handler: the SDK's authorization-code
// handler, made non-interactive unless a login is under way, plus the
// token file.
type oauthState struct {
	m         *Manager
	server    string
	inner     *auth.AuthorizationCodeHandler
	path      string
	resource  string
	discovery *legacyIssuer

	authMu sync.Mutex // one authorization at a time
	mu     sync.Mutex
	// login, when set, runs the browser part of an interactive login.
	login func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error)
	// fresh makes requests go without the stored token until a new one is
	// issued, so Login always logs in.
	fresh bool
	// stepUp are scopes a 403 asked for, requested at the next login.
	stepUp []string
}

// TokenSource returns the stored token's source (nil while a login is
// forcing a new one).
func (st *oauthState) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	st.mu.Lock()
	fresh := st.fresh
	st.mu.Unlock()
	if fresh {
		return nil, nil
	}
	return st.inner.TokenSource(ctx)
}

// Authorize runs the authorization flow when one may happen now, and
// otherwise fails with ErrLoginRequired, remembering a wider scope a 403
// asked for so the next login requests it.
func (st *oauthState) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	st.authMu.Lock()
	defer st.authMu.Unlock()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	stepUp := resp.StatusCode == http.StatusForbidden && challengeParam(challenges, "error") == "insufficient_scope"
	if resp.StatusCode == http.StatusForbidden && !stepUp {
		return st.inner.Authorize(ctx, req, resp) // not about scopes: the SDK retries once
	}
	wider := strings.Fields(challengeParam(challenges, "scope"))
	st.mu.Lock()
	if stepUp {
		st.stepUp = unionScopes(st.stepUp, wider)
	}
	login, need := st.login, st.stepUp
	st.mu.Unlock()
	if login == nil && st.m.opts.OpenAuthURL == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if stepUp {
			st.saveStepUp(need)
			return fmt.Errorf("%w (server %q asks for a wider scope: %s)", ErrLoginRequired, st.server, strings.Join(need, " "))
		}
		return fmt.Errorf("%w (server %q)", ErrLoginRequired, st.server)
	}
	st.discovery.reset()
	if err := st.inner.Authorize(ctx, req, resp); err != nil {
		return err
	}
	st.mu.Lock()
	st.fresh, st.stepUp = false, nil
	st.mu.Unlock()
	return nil
}

// saveStepUp keeps the wider scopes in the token file for the next login.
func (st *oauthState) saveStepUp(scopes []string) {
	saved, err := loadToken(st.path)
	if err != nil {
		return
	}
	saved.StepUpScopes = scopes
	_ = saveToken(st.path, saved) // losing it costs a second 403, not a failure
}

// challengeParam returns a Bearer challenge's parameter.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// unionScopes is a followed by the scopes of b it lacks.
func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
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
	if h := m.oauthFor[s.cfg.Name]; h != nil {
		return h, nil
	}
	c := s.cfg.OAuth
	if c.Grant == GrantCrossApp {
		cred := &oauthex.ClientCredentials{ClientID: c.ClientID}
		if c.ClientSecret != "" {
			cred.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}
		}
		hc := s.cfg.HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		h := &crossApp{idp: c.IdP, client: cred, http: hc}
		m.oauthFor[s.cfg.Name] = h
		return h, nil
	}
	if c.Grant == GrantClientCredentials && c.PrivateKeyPEM != "" {
		h, err := newJWTCredentials(c.ClientID, c.PrivateKeyPEM, s.cfg.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: OAuth: %w", s.cfg.Name, err)
		}
		m.oauthFor[s.cfg.Name] = h
		return h, nil
	}
	if c.Grant == GrantClientCredentials {
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: c.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}},
		})
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: OAuth: %w", s.cfg.Name, err)
		}
		m.oauthFor[s.cfg.Name] = h
		return h, nil
	}
	st, err := m.newOAuthState(s)
	if err != nil {
		return nil, err
	}
	m.oauthFor[s.cfg.Name] = st
	return st, nil
}

// loginState returns the server's authorization-code handler, for Login.
func (m *Manager) loginState(s *server) (*oauthState, error) {
	h, err := m.oauthHandler(s)
	if err != nil {
		return nil, err
	}
	st, ok := h.(*oauthState)
	if !ok {
		return nil, fmt.Errorf("mcp: server %q uses the %s grant, which needs no login", s.cfg.Name, s.cfg.OAuth.Grant)
	}
	return st, nil
}

// newOAuthState builds a server's authorization-code handler, starting
// from the token file when it holds a token for the server's URL.
func (m *Manager) newOAuthState(s *server) (*oauthState, error) {
	path, err := m.tokenPath(s.cfg.Name)
	if err != nil {
		return nil, err
	}
	resource, err := Expand(s.cfg.URL, m.lookup)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: URL: %w", s.cfg.Name, err)
	}
	u, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: URL: %w", s.cfg.Name, err)
	}
	base := http.DefaultTransport
	if s.cfg.HTTPClient != nil && s.cfg.HTTPClient.Transport != nil {
		base = s.cfg.HTTPClient.Transport
	}
	st := &oauthState{m: m, server: s.cfg.Name, path: path, resource: resource, discovery: &legacyIssuer{base: base, origin: origin(u)}}
	c := s.cfg.OAuth
	cfg := &auth.AuthorizationCodeHandlerConfig{
		Client:              &http.Client{Transport: st.discovery},
		RedirectURL:         c.redirect(),
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return st.fetchCode(ctx, c.redirect(), args.URL)
		},
		ScopeFilter: func(discovered []string) []string {
			st.mu.Lock()
			defer st.mu.Unlock()
			return unionScopes(discovered, st.stepUp)
		},
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			saved := &savedToken{Resource: resource, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, AuthURL: oc.Endpoint.AuthURL,
				TokenURL: oc.Endpoint.TokenURL, AuthStyle: int(oc.Endpoint.AuthStyle), RedirectURL: oc.RedirectURL, Scopes: oc.Scopes, Token: tok}
			if err := saveToken(path, saved); err != nil {
				return nil, err
			}
			return &savingSource{src: oc.TokenSource(ctx, tok), path: path, saved: saved}, nil
		},
	}
	if c.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: c.ClientMetadataURL}
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
	switch saved, err := loadToken(path); {
	case err == nil && saved.Resource != resource:
		m.log.Warn("mcp: ignoring an OAuth token issued for another URL; log in again", "server", s.cfg.Name)
	case err == nil:
		oc := &oauth2.Config{ClientID: saved.ClientID, ClientSecret: saved.ClientSecret, RedirectURL: saved.RedirectURL, Scopes: saved.Scopes,
			Endpoint: oauth2.Endpoint{AuthURL: saved.AuthURL, TokenURL: saved.TokenURL, AuthStyle: oauth2.AuthStyle(saved.AuthStyle)}}
		cfg.InitialTokenSource = &savingSource{src: oc.TokenSource(context.Background(), saved.Token), path: path, saved: saved}
		st.stepUp = saved.StepUpScopes
	case !errors.Is(err, os.ErrNotExist):
		m.log.Warn("mcp: ignoring an unreadable OAuth token file", "server", s.cfg.Name, "err", err)
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: OAuth: %w", s.cfg.Name, err)
	}
	st.inner = h
	return st, nil
}

// fetchCode gets an authorization code: through the login under way, or
// on demand through Options.OpenAuthURL.
func (st *oauthState) fetchCode(ctx context.Context, redirect, authURL string) (*auth.AuthorizationResult, error) {
	st.mu.Lock()
	login := st.login
	st.mu.Unlock()
	if login != nil {
		return login(ctx, authURL)
	}
	if open := st.m.opts.OpenAuthURL; open != nil {
		return browserLogin(ctx, redirect, authURL, func(ctx context.Context, u string) error { return open(ctx, st.server, u) }, loginTimeout)
	}
	return nil, fmt.Errorf("%w (server %q)", ErrLoginRequired, st.server)
}
