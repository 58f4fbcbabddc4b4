package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
)

// anyOrder compares scope lists as sets: a scope parameter's order means
// nothing.
var anyOrder = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// login logs m in to server, playing the browser.
func login(t *testing.T, m *mcp.Manager, server string) (opened string) {
	t.Helper()
	err := m.Login(context.Background(), server, &mcp.LoginRequest{Open: func(ctx context.Context, u string) error {
		opened = u
		mcptest.Browse(u)
		return nil
	}})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	return opened
}

func guardedConfig(t *testing.T, url string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: "guarded", URL: url, OAuth: &mcp.OAuthConfig{
		ClientID: "rein-test", RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", freeLoopbackPort(t)),
	}}
}

func savedAccessToken(t *testing.T, state string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "mcp", "oauth", "guarded.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Token struct {
			AccessToken string `json:"access_token"`
		} `json:"token"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Token.AccessToken
}

func TestOAuthLogin(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, nil)
	state := t.TempDir()
	cfg := guardedConfig(t, srv.URL)
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: state})
	// Without a token, a run does not start a browser: it says to log in.
	err := m.Warmup(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rein mcp login") {
		t.Fatalf("Warmup without a token = %v, want a request to log in", err)
	}
	if opened := login(t, m, "guarded"); !strings.HasPrefix(opened, srv.Base+"/authorize?") {
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
	if tok := savedAccessToken(t, state); tok != "access-1" {
		t.Errorf("saved access token = %q, want access-1", tok)
	}
	// A later process uses the stored token without logging in again.
	m2 := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: state})
	if err := m2.Warmup(context.Background()); err != nil {
		t.Fatalf("Warmup with a stored token: %v", err)
	}
	if n := srv.Issued(); n != 1 {
		t.Errorf("tokens issued = %d, want 1", n)
	}
}

// An expired token is refreshed with the stored refresh token, and the
// new one is written back for the next process.
func TestOAuthRefresh(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, &mcptest.OAuthServerOptions{ExpiresIn: 1}) // inside oauth2's expiry margin: stale at once
	state := t.TempDir()
	cfg := guardedConfig(t, srv.URL)
	login(t, newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: state}), "guarded")
	before := savedAccessToken(t, state)
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: state})
	if _, err := m.Call(context.Background(), "guarded", "secret", nil); err != nil {
		t.Fatalf("call with an expired token: %v", err)
	}
	if srv.Refreshed() == 0 {
		t.Error("the expired token was not refreshed")
	}
	if srv.Issued() != 1 {
		t.Errorf("tokens issued by login = %d, want 1 (refresh, not a new login)", srv.Issued())
	}
	if after := savedAccessToken(t, state); after == before {
		t.Errorf("the refreshed token was not saved (still %q)", after)
	}
}

// A token is kept for the URL it was issued for: a server of the same name
// at another URL never receives it.
func TestOAuthTokenBoundToURL(t *testing.T) {
	first := mcptest.NewOAuthServer(t, nil)
	other := mcptest.NewOAuthServer(t, nil)
	state := t.TempDir()
	login(t, newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{guardedConfig(t, first.URL)}, StateDir: state}), "guarded")
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{guardedConfig(t, other.URL)}, StateDir: state})
	err := m.Warmup(context.Background())
	if !errors.Is(err, mcp.ErrLoginRequired) {
		t.Fatalf("Warmup against another URL = %v, want ErrLoginRequired", err)
	}
}

// A 403 insufficient_scope outside a login says which scope is missing;
// the next login asks for it on top of the first.
func TestOAuthStepUpAtNextLogin(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, &mcptest.OAuthServerOptions{Scope: "read", StepUpScope: "write"})
	state := t.TempDir()
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{guardedConfig(t, srv.URL)}, StateDir: state})
	login(t, m, "guarded")
	if diff := cmp.Diff([]string{"read"}, srv.AskedScopes()); diff != "" {
		t.Errorf("first login's scopes (-want +got):\n%s", diff)
	}
	_, err := m.Call(context.Background(), "guarded", "secret", nil)
	if !errors.Is(err, mcp.ErrLoginRequired) || !strings.Contains(err.Error(), "write") {
		t.Fatalf("call needing a wider scope = %v, want ErrLoginRequired naming write", err)
	}
	// A later process logs in again and gets both.
	m2 := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{guardedConfig(t, srv.URL)}, StateDir: state})
	login(t, m2, "guarded")
	if diff := cmp.Diff([]string{"read", "write"}, srv.AskedScopes(), anyOrder); diff != "" {
		t.Errorf("second login's scopes (-want +got):\n%s", diff)
	}
	res, err := m2.Call(context.Background(), "guarded", "secret", nil)
	if err != nil || res.TextOf() != "the secret" {
		t.Fatalf("call after the wider login = %v, %v", res, err)
	}
}

// With Options.OpenAuthURL a server logs in when it first asks, and steps
// up to a wider scope in the middle of a call.
func TestOAuthOnDemandLoginAndStepUp(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, &mcptest.OAuthServerOptions{Scope: "read", StepUpScope: "write"})
	var opened []string
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{guardedConfig(t, srv.URL)}, StateDir: t.TempDir(),
		OpenAuthURL: func(ctx context.Context, server, u string) error {
			opened = append(opened, server)
			mcptest.Browse(u)
			return nil
		}})
	res, err := m.Call(context.Background(), "guarded", "secret", nil)
	if err != nil || res.TextOf() != "the secret" {
		t.Fatalf("call = %v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"guarded", "guarded"}, opened); diff != "" {
		t.Errorf("logins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"read", "write"}, srv.AskedScopes(), anyOrder); diff != "" {
		t.Errorf("step-up scopes (-want +got):\n%s", diff)
	}
}

// The client-credentials grant needs no browser and no login.
func TestOAuthClientCredentials(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, &mcptest.OAuthServerOptions{ClientID: "svc", ClientSecret: "shh"})
	cfg := mcp.ServerConfig{Name: "guarded", URL: srv.URL, OAuth: &mcp.OAuthConfig{Grant: mcp.GrantClientCredentials, ClientID: "svc", ClientSecret: "shh"}}
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, StateDir: t.TempDir()})
	res, err := m.Call(context.Background(), "guarded", "secret", nil)
	if err != nil || res.TextOf() != "the secret" {
		t.Fatalf("call = %v, %v", res, err)
	}
	if err := m.Login(context.Background(), "guarded", &mcp.LoginRequest{Open: func(context.Context, string) error { return nil }}); err == nil {
		t.Error("Login of a client-credentials server succeeded; it needs none")
	}
	bad := cfg
	bad.OAuth = &mcp.OAuthConfig{Grant: mcp.GrantClientCredentials, ClientID: "svc"}
	if _, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{bad}}); !errors.Is(err, mcp.ErrConfig) {
		t.Errorf("client credentials without a secret = %v, want ErrConfig", err)
	}
}

// A 2025-03-26 server is its own authorization server, and its metadata
// may name another issuer than its origin: rein logs in all the same.
func TestOAuthLegacyIssuer(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, &mcptest.OAuthServerOptions{Legacy: true})
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{guardedConfig(t, srv.URL)}, StateDir: t.TempDir()})
	login(t, m, "guarded")
	res, err := m.Call(context.Background(), "guarded", "secret", nil)
	if err != nil || res.TextOf() != "the secret" {
		t.Fatalf("call = %v, %v", res, err)
	}
}
