package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp/mcptest"
)

// mcpLogin runs 'rein mcp login NAME' with args, playing the browser: it
// opens the URL rein prints.
func mcpLogin(t *testing.T, e *env, extraEnv []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := e.cmd(ctx, extraEnv, append([]string{"mcp", "login", name}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var printed []string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		printed = append(printed, line)
		if strings.HasPrefix(line, "http") {
			mcptest.Browse(line)
		}
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein mcp login: %v\n%s\n%s", err, strings.Join(printed, "\n"), stderr.String())
	}
	if !strings.Contains(strings.Join(printed, "\n"), "Logged in to "+name) {
		t.Fatalf("login output:\n%s", strings.Join(printed, "\n"))
	}
}

func loopbackRedirect(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("http://127.0.0.1:%d/callback", l.Addr().(*net.TCPAddr).Port)
}

// The token 'rein mcp login' saves is the one 'rein run' sends, whichever
// source names the server: --mcp with a pre-registered client id at
// login, the workspace's .mcp.json and a bare --mcp NAME=URL at run time.
func TestMCPLoginTokenReusedByRun(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, &mcptest.OAuthServerOptions{ClientSecret: "shh"})
	e := newEnv(t)
	mcpLogin(t, e, []string{"GUARDED_SECRET=shh"}, "guarded", "--mcp", "guarded="+srv.URL+" client_id=rein-test client_secret=${GUARDED_SECRET} redirect_url="+loopbackRedirect(t))
	if srv.Issued() != 1 {
		t.Fatalf("tokens issued at login = %d, want 1", srv.Issued())
	}
	saved, err := os.ReadFile(filepath.Join(e.home, "state", "rein", "mcp", "oauth", "guarded.json"))
	if err != nil {
		t.Fatalf("no token file after login: %v", err)
	}
	if !strings.Contains(string(saved), srv.URL) {
		t.Errorf("the token file does not name the server URL it is for:\n%s", saved)
	}
	project := fmt.Sprintf(`{"mcpServers": {"guarded": {"type": "http", "url": %q}}}`, srv.URL)
	if err := os.WriteFile(filepath.Join(e.work, ".mcp.json"), []byte(project), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, source := range [][]string{nil, {"--mcp", "guarded=" + srv.URL}} {
		t.Run(fmt.Sprint("mcp flags ", source), func(t *testing.T) {
			m := llmtest.NewModel(
				llmtest.CallTool("c1", "mcp_guarded_secret", `{}`),
				llmtest.Reply("Done."),
			)
			llm := llmtest.NewServer(t, m)
			args := append([]string{"--json", "--approve", "auto"}, source...)
			r := e.run(anthropicWire.env(), anthropicWire.args(llm, e, append(args, "tell the secret")...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			results := eventsOf(parseEvents(t, r.stdout), "tool.result")
			if len(results) != 1 || results[0]["is_error"] == true || !strings.Contains(fmt.Sprint(results[0]["parts"]), "the secret") {
				t.Errorf("tool.result events = %v, want the secret", results)
			}
			if strings.Contains(r.stdout+r.stderr, "access-1") || strings.Contains(r.stdout+r.stderr, "shh") {
				t.Error("a token or the client secret reached rein's output")
			}
		})
	}
	if srv.Issued() != 1 {
		t.Errorf("tokens issued = %d, want 1: the runs must reuse the saved token", srv.Issued())
	}
	// rein mcp call uses it too, without a model.
	r := e.run(nil, "mcp", "call", "guarded", "secret")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "the secret" {
		t.Errorf("mcp call: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range [][]string{{"mcp", "call", "guarded", "nope"}, {"mcp", "call", "guarded", "secret", "{not json"}, {"mcp", "call", "nobody", "secret"}} {
		if r := e.run(nil, bad...); r.code != exitUsage {
			t.Errorf("rein %v: exit %d, want %d\n%s", bad, r.code, exitUsage, r.stderr)
		}
	}
	// rein mcp list sees it connected, as JSON.
	r = e.run(nil, "mcp", "list", "--json")
	var rows []struct{ Name, State string }
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || r.code != 0 {
		t.Fatalf("mcp list: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(rows) != 1 || rows[0].State != "connected" {
		t.Errorf("mcp list = %+v, want guarded connected", rows)
	}
}

// Without a login, a run says how to log in instead of offering the model
// an unknown tool, and mcp list exits 1.
func TestMCPRunWithoutLoginSaysLogIn(t *testing.T) {
	srv := mcptest.NewOAuthServer(t, nil)
	e := newEnv(t)
	r := e.run(nil, "mcp", "list", "--json", "--mcp", "guarded="+srv.URL)
	if r.code != exitError || !strings.Contains(r.stdout, "rein mcp login") {
		t.Errorf("mcp list without a login: exit %d, want %d with a login hint\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Errorf("mcp list --json printed no JSON: %v\n%s", err, r.stdout)
	}
}
