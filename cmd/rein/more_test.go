package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/llmtest"
)

func TestRunConfigFile(t *testing.T) {
	e := newEnv(t)
	m := llmtest.NewModel(llmtest.Reply("from config"))
	srv := llmtest.NewServer(t, m)
	dir := filepath.Join(e.home, "config", "rein")
	os.MkdirAll(dir, 0o755)
	cfg := "model = \"openai-compatible/local-model\"\nstore = \"jsonl:" + filepath.Join(e.home, "js") + "\"\n\n[providers.openai-compatible]\nbase_url = \"" + srv.URL + "/v1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run(nil, "run", "hello")
	if r.code != 0 || r.stdout != "from config\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := m.Requests()[0].Model; got != "local-model" {
		t.Errorf("model sent = %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.home, "js")); err != nil {
		t.Errorf("the config's store was not used: %v", err)
	}
	// The environment overrides the config file, and flags override both.
	r = e.run([]string{"REIN_MODEL=ollama/x", "REIN_STORE=mem:"}, "run", "--show-context")
	if r.code != 0 {
		t.Errorf("show-context: exit %d\n%s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "config.toml"), []byte("modle = \"x\"\n"), 0o644)
	r = e.run(nil, "run", "hello")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown key "modle"`) {
		t.Errorf("bad config: exit %d\n%s", r.code, r.stderr)
	}
}

func TestRunTimeoutExits3(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Hang()))
	r := e.run(w.env(), w.args(srv, e, "--timeout", "300ms", "wait forever")...)
	if r.code != 3 || !strings.Contains(r.stderr, "timeout") {
		t.Errorf("exit %d, want 3; stderr:\n%s", r.code, r.stderr)
	}
}

func TestRunDryRunChangesNothing(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "write", `{"path":"x.txt","content":"x"}`),
		llmtest.Reply("ok"),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, "--dry-run", "--approve", "auto", "write x")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.work, "x.txt")); err == nil {
		t.Error("--dry-run wrote the file")
	}
}

func TestRunStdinPrompt(t *testing.T) {
	e := newEnv(t)
	w := wires[1]
	m := llmtest.NewModel(llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	cmd := e.cmd(t.Context(), w.env(), w.args(srv, e, "--tools", "none", "-")...)
	cmd.Stdin = strings.NewReader("prompt from stdin\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := lastUserText(m.Requests()[0]); got != "prompt from stdin\n" {
		t.Errorf("prompt = %q", got)
	}
	if n := len(m.Requests()[0].Tools); n != 0 {
		t.Errorf("--tools none offered %d tools", n)
	}
}

func TestReplayReportsDivergence(t *testing.T) {
	e := newEnv(t)
	b, err := os.ReadFile(filepath.Join(examplesDir, "hello.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the file had other content when it was recorded.
	changed := strings.Replace(string(b), `"Hello from rein!\n17 hello.txt`, `"Hello from somewhere else!\n27 hello.txt`, 1)
	if changed == string(b) {
		t.Fatal("the example no longer holds the shell output this test edits")
	}
	path := filepath.Join(e.home, "changed.ndjson")
	os.WriteFile(path, []byte(changed), 0o644)
	r := e.run(nil, "replay", path)
	if r.code != 0 || !strings.Contains(r.stderr, "divergence: tool call toolu_02 (shell): result differs") || !strings.Contains(r.stderr, "; 1 divergence\n") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r := e.run(nil, "replay", "--strict", path); r.code != 1 {
		t.Errorf("--strict: exit %d, want 1", r.code)
	}
	if r := e.run(nil, "replay", "no-such-session"); r.code != 2 || !strings.Contains(r.stderr, "rein sessions list") {
		t.Errorf("missing: exit %d\n%s", r.code, r.stderr)
	}
}

func TestReplayStoredSession(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(llmtest.CallTool("c1", "ls", `{"path":"."}`), llmtest.Reply("Listed."))
	srv := llmtest.NewServer(t, m)
	os.WriteFile(filepath.Join(e.work, "present.txt"), []byte("here"), 0o644)
	if r := e.run(w.env(), w.args(srv, e, "--new-session", "rec", "list")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// The replay runs in a copy of the session's workspace, so ls sees the same file.
	r := e.run(nil, "replay", "--strict", "--store", e.store, "rec")
	if r.code != 0 || !strings.Contains(r.stdout, "Listed.") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestCompletionAndModels(t *testing.T) {
	e := newEnv(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := e.run(nil, "completion", sh); r.code != 0 || len(r.stdout) < 100 {
			t.Errorf("completion %s: exit %d, %d bytes", sh, r.code, len(r.stdout))
		}
	}
	r := e.run(nil, "models")
	if r.code != 0 || !strings.Contains(r.stdout, "anthropic/claude-sonnet-4-5") || !strings.Contains(r.stdout, "200k") {
		t.Errorf("models: exit %d\n%s", r.code, r.stdout)
	}
}

// TestMissingConfigFileIsRefused: a --config file that does not exist is
// a usage error naming the flag, not a silent empty config; the default
// config file may be missing.
func TestMissingConfigFileIsRefused(t *testing.T) {
	e := newEnv(t)
	missing := filepath.Join(e.home, "nope.toml")
	r := e.run(nil, "--config", missing, "sessions", "list")
	if r.code != 2 || !strings.Contains(r.stderr, "--config "+missing+": no such file") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming --config and the file", r.code, r.stderr)
	}
	if r := e.run(nil, "sessions", "list"); r.code != 0 {
		t.Fatalf("without --config: exit %d: %s", r.code, r.stderr)
	}
}
