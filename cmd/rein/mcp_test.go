package main

import (
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/llm/llmtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/reinhq/rein/mcp"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		err      string
	}{
		{"plain", "npx -y server .", []string{"npx", "-y", "server", "."}, ""},
		{"extra spaces", "  a   b\tc ", []string{"a", "b", "c"}, ""},
		{"single quotes", `node 'my dir/server.js'`, []string{"node", "my dir/server.js"}, ""},
		{"double quotes and escapes", `run "a \"b\" c" d\ e`, []string{"run", `a "b" c`, "d e"}, ""},
		{"no expansion", `echo $HOME '$X'`, []string{"echo", "$HOME", "$X"}, ""},
		{"empty quotes are a word", `cmd ""`, []string{"cmd", ""}, ""},
		{"joined", `a"b"'c'`, []string{"abc"}, ""},
		{"unclosed", `a 'b`, nil, "unclosed single quote"},
		{"unclosed double", `a "b`, nil, "unclosed double quote"},
		{"empty", "   ", nil, "no command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splitWords(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("splitWords(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("splitWords(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseMCPFlag(t *testing.T) {
	t.Setenv("REIN_TEST_SECRET", "s3cret")
	tests := []struct {
		in   string
		want mcp.ServerConfig
		err  bool
	}{
		{in: "fs=npx -y @modelcontextprotocol/server-filesystem '/tmp/a b'", want: mcp.ServerConfig{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp/a b"}}},
		{in: "docs=https://example.com/mcp", want: mcp.ServerConfig{Name: "docs", URL: "https://example.com/mcp"}},
		{in: "local=http://127.0.0.1:3001/mcp", want: mcp.ServerConfig{Name: "local", URL: "http://127.0.0.1:3001/mcp"}},
		{in: "sso=https://example.com/mcp client_id=abc client_secret=${REIN_TEST_SECRET} redirect_url=http://127.0.0.1:9/cb header=X-Team:core",
			want: mcp.ServerConfig{Name: "sso", URL: "https://example.com/mcp", Headers: map[string]string{"X-Team": "core"},
				OAuth: &mcp.OAuthConfig{ClientID: "abc", ClientSecret: "s3cret", RedirectURL: "http://127.0.0.1:9/cb"}}},
		{in: "old=https://example.com/sse transport=sse", want: mcp.ServerConfig{Name: "old", URL: "https://example.com/sse", SSE: true}},
		{in: "x=https://a client_id=", err: true},
		{in: "x=https://a colour=blue", err: true},
		{in: "x=https://a transport=sse client_id=abc", err: true},
		{in: "x=https://a client_secret=${REIN_TEST_UNSET}", err: true},
		{in: "noname", err: true},
		{in: "=cmd", err: true},
		{in: "x=", err: true},
		{in: "x=https://a b", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseMCPFlag(tt.in)
			if tt.err {
				if err == nil {
					t.Fatalf("parseMCPFlag(%q) = %+v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(mcp.ServerConfig{}, "Filter", "Auth", "NewTransport")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMCPServersFromConfigAndFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	conf := `
[mcp.servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
disabled = ["write_file"]
timeout = "10s"

[mcp.servers.docs]
url = "https://example.com/sse"
transport = "sse"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
lazy = true
host_only = true
`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadMCPConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	// The project file names docs too, and a server of its own: the
	// config's docs stays.
	project := []mcp.ServerConfig{{Name: "docs", URL: "https://evil.example/mcp"}, {Name: "proj", Command: "proj-server"}}
	got, err := mcpServers(cfg, project, []string{"fs=./my-fs --root /", "extra=https://example.org/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.ServerConfig{
		{Name: "docs", URL: "https://example.com/sse", SSE: true, Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}, Lazy: true, HostOnly: true},
		{Name: "fs", Command: "./my-fs", Args: []string{"--root", "/"}}, // the flag replaced the config's fs
		{Name: "proj", Command: "proj-server"},
		{Name: "extra", URL: "https://example.org/mcp"},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mcp.ServerConfig{}, "Filter", "Auth", "NewTransport")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The template stays unresolved in the config: it is resolved only
	// when a connection opens.
	if got[0].Headers["Authorization"] != "Bearer ${DOCS_TOKEN}" {
		t.Errorf("header resolved too early: %q", got[0].Headers["Authorization"])
	}
	fs, _ := mcpServers(cfg, nil, nil)
	if fs[1].ConnectTimeout != 10*time.Second || fs[1].Disabled[0] != "write_file" {
		t.Errorf("fs from the config = %+v", fs[1])
	}
	bad := &mcpConfig{Servers: map[string]mcpServerConfig{"x": {URL: "https://a", Transport: "carrier-pigeon"}}}
	if _, err := mcpServers(bad, nil, nil); err == nil {
		t.Error("an unknown transport was accepted")
	}
}

func TestMCPOAuthSettings(t *testing.T) {
	t.Setenv("REIN_TEST_SECRET", "s3cret")
	key := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(key, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := parseMCPFlag("svc=https://example.com/mcp grant=client_credentials client_id=svc private_key_file=" + key)
	if err != nil || sc.OAuth == nil || sc.OAuth.Grant != mcp.GrantClientCredentials || sc.OAuth.PrivateKeyPEM != "PEM" {
		t.Errorf("client credentials flag = %+v, %v", sc.OAuth, err)
	}
	sc, err = parseMCPFlag("ent=https://example.com/mcp grant=cross_app client_id=c idp_issuer=https://idp idp_client_id=i id_token=${REIN_TEST_SECRET}")
	if err != nil || sc.OAuth.IdP == nil || sc.OAuth.IdP.Issuer != "https://idp" || sc.OAuth.IdP.IDToken == nil {
		t.Fatalf("cross-app flag = %+v, %v", sc.OAuth, err)
	}
	if tok, _ := sc.OAuth.IdP.IDToken(t.Context()); tok != "s3cret" {
		t.Errorf("id_token = %q, want the variable's value", tok)
	}
	if _, err := parseMCPFlag("x=https://a private_key_file=/nonexistent/key.pem"); err == nil {
		t.Error("a missing key file was accepted")
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	conf := `
[mcp.servers.docs]
url = "https://example.com/mcp"
[mcp.servers.docs.oauth]
client_id = "abc"
client_secret = "${REIN_TEST_SECRET}"
grant = "client_credentials"
`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadMCPConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mcpServers(cfg, nil, nil)
	if err != nil || len(got) != 1 || *got[0].OAuth != (mcp.OAuthConfig{Grant: "client_credentials", ClientID: "abc", ClientSecret: "s3cret"}) {
		t.Errorf("config oauth = %+v, %v", got, err)
	}
	bad := &mcpConfig{Servers: map[string]mcpServerConfig{"x": {URL: "https://a", OAuth: map[string]string{"colour": "blue"}}}}
	if _, err := mcpServers(bad, nil, nil); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("an unknown oauth key = %v, want an error naming it", err)
	}
}

func TestMCPListEverything(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; install Node.js 18+ to run the MCP reference-server tests")
	}
	bin, _ := filepath.Abs(filepath.Join("..", "..", "mcp", "testdata", "node", "node_modules", ".bin", "mcp-server-everything"))
	if _, err := os.Stat(bin); err != nil {
		t.Skip("mcp-server-everything is not installed; run: npm ci --prefix mcp/testdata/node")
	}
	e := newEnv(t)
	r := e.run(nil, "mcp", "list", "--json", "--mcp", "everything="+bin+" stdio", "--mcp", "broken=/nonexistent/server")
	if r.code != exitError || !strings.Contains(r.stderr, "broken") {
		t.Fatalf("rein mcp list with a broken server: exit %d, want %d naming it\n%s", r.code, exitError, r.stderr)
	}
	var rows []struct {
		Name, State, Transport, Error string
		Tools                         []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(rows) != 2 || rows[0].Name != "everything" || rows[0].State != "connected" || rows[0].Transport != "stdio" {
		t.Fatalf("rows = %+v", rows)
	}
	found := false
	for _, n := range rows[0].Tools {
		found = found || n == "mcp_everything_echo"
	}
	if !found {
		t.Errorf("everything's tools = %q, want mcp_everything_echo", rows[0].Tools)
	}
	if rows[1].State != "down" || !strings.Contains(rows[1].Error, "/nonexistent/server") {
		t.Errorf("broken = %+v, want down with the error", rows[1])
	}
	// The table form.
	r = e.run(nil, "mcp", "list", "--mcp", "everything="+bin+" stdio")
	if r.code != 0 || !strings.Contains(r.stdout, "everything") || !strings.Contains(r.stdout, "connected") {
		t.Errorf("table = exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// everythingBin returns the npm reference server, or skips.
func everythingBin(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; install Node.js 18+ to run the MCP reference-server tests")
	}
	bin, _ := filepath.Abs(filepath.Join("..", "..", "mcp", "testdata", "node", "node_modules", ".bin", "mcp-server-everything"))
	if _, err := os.Stat(bin); err != nil {
		t.Skip("mcp-server-everything is not installed; run: npm ci --prefix mcp/testdata/node")
	}
	return bin
}

// rein run with --mcp: the model calls a server's tool through the loop,
// the call is recorded with origin mcp, and a server that cannot start
// is reported without stopping the run.
func TestRunCallsMCPTool(t *testing.T) {
	bin := everythingBin(t)
	e := newEnv(t)
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "mcp_everything_echo", `{"message":"hello over stdio"}`),
		llmtest.Reply("It echoed."),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--json", "--approve", "auto",
		"--mcp", "everything="+bin+" stdio", "--mcp", "broken=/nonexistent/server", "echo it")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "broken") {
		t.Errorf("the failed server was not reported:\n%s", r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	calls := eventsOf(evs, "tool.call")
	if len(calls) != 1 || calls[0]["name"] != "mcp_everything_echo" || calls[0]["origin"] != "mcp" {
		t.Errorf("tool.call events = %v, want one mcp_everything_echo call with origin mcp", calls)
	}
	// The servers' lifecycle is on the log too, bootstrap included.
	kinds := map[string]bool{}
	for _, ev := range eventsOf(evs, "mcp.event") {
		kinds[fmt.Sprint(ev["kind"], " ", ev["server"])] = true
	}
	if !kinds["mcp:connect everything"] || !kinds["mcp:bootstrap:end everything"] || !kinds["mcp:bootstrap:end broken"] {
		t.Errorf("mcp.event records = %v, want everything's connect and both bootstrap ends", kinds)
	}
	for _, ev := range eventsOf(evs, "mcp.event") {
		if ev["kind"] == "mcp:bootstrap:end" && ev["server"] == "broken" {
			detail, _ := ev["detail"].(map[string]any)
			if detail["OK"] != false || !strings.Contains(fmt.Sprint(detail["Error"]), "/nonexistent/server") {
				t.Errorf("broken's bootstrap record = %v, want OK false and the error as text", detail)
			}
		}
	}
	results := eventsOf(evs, "tool.result")
	if len(results) != 1 || results[0]["is_error"] == true || !strings.Contains(fmt.Sprint(results[0]["parts"]), "hello over stdio") {
		t.Errorf("tool.result events = %v, want the echo", results)
	}
}

func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"a b", `'a b' "c d"`, `a\ b`, `"a\"b"`, `'`, `"`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitWords(s)
		if err == nil && len(words) == 0 {
			t.Fatalf("splitWords(%q) returned no words and no error", s)
		}
	})
}
