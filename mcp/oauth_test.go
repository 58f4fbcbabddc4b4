package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/mcp"
)

// oauthServer is an MCP server behind a minimal OAuth authorization
// server: PKCE authorization-code grant, one client, one token.
func oauthServer(t *testing.T) (srvURL string, tokens *atomic.Int32) {
	t.Helper()
	tokens = new(atomic.Int32)
	s := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "secret"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the secret"}}}, nil, nil
	})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good-token" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, base))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "rein-test" || q.Get("code_challenge") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		u, _ := url.Parse(q.Get("redirect_uri"))
		v := u.Query()
		v.Set("code", "the-code")
		v.Set("state", q.Get("state"))
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("code") != "the-code" || r.Form.Get("code_verifier") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		tokens.Add(1)
		writeJSON(w, map[string]any{"access_token": "good-token", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return srv.URL, tokens
}

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestOAuthLogin(t *testing.T) {
	base, tokens := oauthServer(t)
	state := t.TempDir()
	cfg := mcp.ServerConfig{Name: "guarded", URL: base + "/mcp", OAuth: &mcp.OAuthConfig{
		ClientID: "rein-test", RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", freeLoopbackPort(t)),
	}}
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: state})
	// Without a token, a run does not start a browser: it says to log in.
	err := m.Warmup(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rein mcp login") {
		t.Fatalf("Warmup without a token = %v, want a request to log in", err)
	}
	opened := ""
	err = m.Login(context.Background(), "guarded", &mcp.LoginRequest{Open: func(ctx context.Context, u string) error {
		opened = u
		go func() { // the browser: follows the redirect back to rein
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if !strings.HasPrefix(opened, base+"/authorize?") {
		t.Errorf("opened %q, want the authorization endpoint", opened)
	}
	res, err := m.Call(context.Background(), "guarded", "secret", nil)
	if err != nil || res.TextOf() != "the secret" {
		t.Fatalf("call after login = %v, %v", res, err)
	}
	path := filepath.Join(state, "mcp", "oauth", "guarded.json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "good-token") {
		t.Errorf("token file does not hold the token")
	}
	// A later process uses the stored token without logging in again.
	m2 := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: state})
	if err := m2.Warmup(context.Background()); err != nil {
		t.Fatalf("Warmup with a stored token: %v", err)
	}
	if n := tokens.Load(); n != 1 {
		t.Errorf("tokens issued = %d, want 1", n)
	}
}
