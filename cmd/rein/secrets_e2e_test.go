package main

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// TestSecretsNeverLeave: with a key in ANTHROPIC_API_KEY, the key rein
// uses in a custom key_env, and an MCP server's header token, neither a
// command (which tries every way to read them) nor anything rein prints
// or stores (--json, stderr, the log, both export formats, an error)
// holds any of them, byte for byte, in base64 or URL-encoded.
func TestSecretsNeverLeave(t *testing.T) {
	secrets := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant/first+key=0001",
		"LLM_CRED":          "llm/cred+custom=key0002",
		"MCP_TOKEN":         "mcp/token+value=0003",
	}
	e := newEnv(t)
	e.writeConfig(t, `
[providers.anthropic]
key_env = "LLM_CRED"

[mcp.servers.remote]
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer ${MCP_TOKEN}" }
lazy = true
`)
	var vars []string
	for k, v := range secrets {
		vars = append(vars, k+"="+v)
	}
	var all []string
	for _, v := range secrets {
		all = append(all, v, base64.StdEncoding.EncodeToString([]byte(v)), url.QueryEscape(v))
	}
	probe := `echo "cred=$LLM_CRED anth=$ANTHROPIC_API_KEY mcp=$MCP_TOKEN"; env; ` +
		`cat /proc/$PPID/environ; for f in /proc/[0-9]*/environ; do cat $f; done; ` +
		`grep -r LLM_CRED /proc/*/environ; cat /proc/1/cmdline`
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", fmt.Sprintf(`{"command":%q}`, probe)),
		// A model that got hold of the secrets anyway repeats them.
		llmtest.Reply("I found "+strings.Join(all, " and ")),
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrInvalidRequest, Message: "invalid key " + secrets["LLM_CRED"]}),
	)
	srv := llmtest.NewServer(t, m)
	store := "jsonl:" + filepath.Join(e.home, "log")
	args := func(session string, rest ...string) []string {
		return append([]string{"run", "--model", "anthropic/claude-sonnet-4-5", "--base-url", srv.URL,
			"--store", store, "--cwd", e.work, "--approve", "auto", "--tools", "shell", session, "s-sec", "--json"}, rest...)
	}
	var outputs []string
	r := e.run(vars, args("--new-session", "find the keys")...)
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `"tool.result"`) || !strings.Contains(r.stdout, "cred=") {
		t.Fatalf("the probe did not run: %s", r.stdout)
	}
	if !strings.Contains(r.stdout, "cred= anth= mcp=") {
		t.Errorf("the command saw a secret in its environment (the scrubber hid it): %s", r.stdout)
	}
	outputs = append(outputs, r.stdout, r.stderr)
	r = e.run(vars, args("--session", "again")...)
	if r.code == 0 || !strings.Contains(r.stderr, "invalid key") {
		t.Fatalf("the failing turn: exit %d, stderr %s", r.code, r.stderr)
	}
	outputs = append(outputs, r.stdout, r.stderr)
	for _, format := range []string{"ndjson", "markdown"} {
		r = e.run(vars, "sessions", "export", "--store", store, "--format", format, "s-sec")
		if r.code != 0 || !strings.Contains(r.stdout, "I found") {
			t.Fatalf("export %s: exit %d: %s %s", format, r.code, r.stdout, r.stderr)
		}
		outputs = append(outputs, r.stdout, r.stderr)
	}
	filepath.Walk(filepath.Join(e.home, "log"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			outputs = append(outputs, string(b))
		}
		return nil
	})
	for i, out := range outputs {
		for _, s := range all {
			if strings.Contains(out, s) {
				t.Errorf("output %d holds %q:\n%s", i, s, out)
			}
		}
	}
}
