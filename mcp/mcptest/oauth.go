// Package mcptest holds fakes for testing MCP clients: an MCP server
// behind a small OAuth authorization server, loopback only.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// OAuthServerOptions configures NewOAuthServer. A nil *OAuthServerOptions
// is a server for the public client "rein-test".
type OAuthServerOptions struct {
	// ClientID is the one client the authorization server knows; empty
	// means "rein-test".
	ClientID string
	// ClientSecret, when set, must accompany every token request (HTTP
	// basic or form parameters).
	ClientSecret string
	// ExpiresIn is the lifetime of an access token in seconds; zero means
	// 3600.
	ExpiresIn int
	// Scope, when set, is what the MCP endpoint asks for in its first
	// challenge; StepUpScope, when set, is what a tool call needs on top:
	// a token without it gets 403 insufficient_scope naming both.
	Scope, StepUpScope string
	// Legacy arranges things as the 2025-03-26 revision did: no
	// protected-resource metadata, the MCP server's origin is the
	// authorization server, and its metadata names the issuer
	// ORIGIN/oauth.
	Legacy bool
}

// OAuthServer is an MCP server with one tool, "secret" (it answers "the
// secret"), behind an OAuth authorization server speaking the
// authorization-code grant with PKCE, the refresh-token grant and, for a
// client with a secret, the client-credentials grant.
type OAuthServer struct {
	// URL is the MCP endpoint; Base is the authorization server's issuer.
	URL, Base string

	opts      OAuthServerOptions
	issued    atomic.Int32
	refreshed atomic.Int32
	mu        sync.Mutex
	tokens    map[string][]string // access token → its scopes
	serial    int
	refresh   map[string][]string // refresh token → its scopes
	scopesAsk []string            // the scopes of the last authorization request
}

// NewOAuthServer starts the server on loopback; it stops when t ends.
func NewOAuthServer(t testing.TB, opts *OAuthServerOptions) *OAuthServer {
	t.Helper()
	o := &OAuthServer{tokens: map[string][]string{}, refresh: map[string][]string{}}
	if opts != nil {
		o.opts = *opts
	}
	if o.opts.ClientID == "" {
		o.opts.ClientID = "rein-test"
	}
	if o.opts.ExpiresIn == 0 {
		o.opts.ExpiresIn = 3600
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "secret"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the secret"}}}, nil, nil
	})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) { o.serveMCP(w, r, mcpHandler) })
	if !o.opts.Legacy {
		mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"resource": o.URL, "authorization_servers": []string{o.Base}})
		})
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		issuer := o.Base
		if o.opts.Legacy {
			issuer += "/oauth"
		}
		writeJSON(w, map[string]any{
			"issuer": issuer, "authorization_endpoint": o.Base + "/authorize", "token_endpoint": o.Base + "/token",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
		})
	})
	mux.HandleFunc("/authorize", o.authorize)
	mux.HandleFunc("/token", o.token)
	srv := httptest.NewUnstartedServer(mux)
	o.Base = "http://" + srv.Listener.Addr().String() // before serving: the handlers read it
	o.URL = o.Base + "/mcp"
	srv.Start()
	t.Cleanup(srv.Close)
	return o
}

// Issued is how many tokens the authorization-code and client-credentials
// grants gave out.
func (o *OAuthServer) Issued() int { return int(o.issued.Load()) }

// Refreshed is how many tokens the refresh-token grant gave out.
func (o *OAuthServer) Refreshed() int { return int(o.refreshed.Load()) }

// AskedScopes are the scopes of the last authorization request.
func (o *OAuthServer) AskedScopes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.scopesAsk)
}

func (o *OAuthServer) serveMCP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	o.mu.Lock()
	scopes, ok := o.tokens[tok]
	o.mu.Unlock()
	meta := o.Base + "/.well-known/oauth-protected-resource/mcp"
	if !ok {
		challenge := fmt.Sprintf(`Bearer resource_metadata="%s"`, meta)
		if o.opts.Legacy {
			challenge = `Bearer realm="mcp"`
		}
		if o.opts.Scope != "" {
			challenge += fmt.Sprintf(`, scope="%s"`, o.opts.Scope)
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if o.opts.StepUpScope != "" && !slices.Contains(scopes, o.opts.StepUpScope) && isToolCall(r) {
		want := strings.TrimSpace(o.opts.Scope + " " + o.opts.StepUpScope)
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, want, meta))
		http.Error(w, "insufficient scope", http.StatusForbidden)
		return
	}
	next.ServeHTTP(w, r)
}

// isToolCall peeks at a JSON-RPC POST body, restoring it for the handler.
func isToolCall(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var msg struct {
		Method string `json:"method"`
	}
	return err == nil && json.Unmarshal(b, &msg) == nil && msg.Method == "tools/call"
}

func (o *OAuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != o.opts.ClientID || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.scopesAsk = strings.Fields(q.Get("scope"))
	o.mu.Unlock()
	u, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := u.Query()
	v.Set("code", "code:"+q.Get("scope"))
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (o *OAuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
	}
	if id != o.opts.ClientID || (o.opts.ClientSecret != "" && secret != o.opts.ClientSecret) {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]any{"error": "invalid_client"})
		return
	}
	var scopes []string
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		code, ok := strings.CutPrefix(r.Form.Get("code"), "code:")
		if !ok || r.Form.Get("code_verifier") == "" {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"error": "invalid_grant"})
			return
		}
		scopes = strings.Fields(code)
		o.issued.Add(1)
	case "refresh_token":
		o.mu.Lock()
		s, ok := o.refresh[r.Form.Get("refresh_token")]
		o.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"error": "invalid_grant"})
			return
		}
		scopes = s
		o.refreshed.Add(1)
	case "client_credentials":
		if o.opts.ClientSecret == "" {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"error": "unauthorized_client"})
			return
		}
		scopes = strings.Fields(r.Form.Get("scope"))
		o.issued.Add(1)
	default:
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"error": "unsupported_grant_type"})
		return
	}
	o.mu.Lock()
	o.serial++
	access, refresh := fmt.Sprintf("access-%d", o.serial), fmt.Sprintf("refresh-%d", o.serial)
	o.tokens[access], o.refresh[refresh] = scopes, scopes
	o.mu.Unlock()
	writeJSON(w, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": o.opts.ExpiresIn,
		"refresh_token": refresh, "scope": strings.Join(scopes, " ")})
}

// Browse plays a browser: it follows authURL's redirect back to the
// client's loopback listener, in the background.
func Browse(authURL string) {
	go func() {
		if resp, err := http.Get(authURL); err == nil {
			resp.Body.Close()
		}
	}()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
