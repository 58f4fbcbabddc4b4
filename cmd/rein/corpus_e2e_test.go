package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// The hook programs of hook/command/testdata/corpus are others' published
// scripts, kept unchanged (see PROVENANCE.md there). Each test installs
// one the way its author documents and checks that it does, under rein,
// what its author says it does.

// corpusDir is where the unchanged scripts are kept.
var corpusDir = filepath.Join("..", "..", "hook", "command", "testdata", "corpus")

// needTools skips a test when a program a script runs is absent.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s not installed; the script needs it (.ci/run installs it)", n)
		}
	}
}

// install copies corpus file src to rel in the workspace, keeping its mode.
func (e *env) install(src, rel string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, src))
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(corpusDir, src))
	if err != nil {
		e.t.Fatal(err)
	}
	e.writeFile(rel, string(b), st.Mode().Perm())
}

// hookSettings writes .claude/settings.json running command for event,
// as the scripts' headers say to register them.
func (e *env) hookSettings(event, matcher, command string) {
	e.t.Helper()
	e.writeFile(".claude/settings.json", `{"hooks":{"`+event+`":[{"matcher":"`+matcher+`","hooks":[{"type":"command","command":"`+command+`"}]}]}}`, 0o644)
}

// runAuto runs one headless turn (--hooks-from claude --approve auto and
// extra flags) of the scripted model and fails the test on a non-zero
// exit; env is added to the process's environment.
func (e *env) runAuto(env, extra []string, prompt string, script ...llmtest.Entry) *llmtest.Model {
	e.t.Helper()
	m := llmtest.NewModel(script...)
	srv := llmtest.NewServer(e.t, m)
	args := append(append([]string{"--hooks-from", "claude", "--approve", "auto"}, extra...), prompt)
	if r := e.run(append(anthropicWire.env(), env...), anthropicWire.args(srv, e, args...)...); r.code != 0 {
		e.t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	return m
}

// exists reports whether rel exists in the workspace.
func (e *env) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(e.work, rel))
	return err == nil
}

// TestCorpusRalphLoopStopHook: the loop's Stop hook (the "keep going
// until done" loop) reads the transcript
// (under the default SQLite store), finds no completion promise in the
// last answer and sends the same prompt back; when the model then states
// the promise, it lets the turn end and removes its state file.
func TestCorpusRalphLoopStopHook(t *testing.T) {
	needTools(t, "bash", "jq")
	e := newEnv(t)
	e.install("ralph-loop-linux/.claude/hooks/stop-hook.sh", ".claude/hooks/stop-hook.sh")
	e.install("ralph-loop-linux/.claude/settings.local.json", ".claude/settings.local.json")
	// The loop starts as the author's /ralph-loop command starts it.
	e.install("ralph-loop-linux/scripts/setup-ralph-loop.sh", "setup-ralph-loop.sh")
	setup := exec.Command("bash", "setup-ralph-loop.sh", "Keep fixing the failing tests", "--completion-promise", "ALL TESTS PASS", "--max-iterations", "5")
	setup.Dir = e.work
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("setup-ralph-loop.sh: %v\n%s", err, out)
	}
	state := filepath.Join(e.work, ".claude", "ralph-loop.local.md")
	m := llmtest.NewModel(
		llmtest.Reply("I fixed one test."),
		llmtest.Reply("Done: <promise>ALL TESTS PASS</promise>"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--hooks-from", "claude", "fix the tests")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2: the hook sends the prompt back once\n%s", len(reqs), r.stderr)
	}
	var fedBack bool
	for _, msg := range reqs[1].Messages {
		if strings.Contains(resultText(msg.Parts), "Keep fixing the failing tests") {
			fedBack = true
		}
	}
	if !fedBack {
		t.Error("the loop's prompt was not sent back to the model")
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("the hook did not see the promise in the transcript: its state file is still there")
	}
}

// TestCorpusGuardGitPushAsksUnderAuto: the guard answers ask for git
// push; under --approve auto with no one to ask, the push is refused with
// the guard's reason, and other commands run.
func TestCorpusGuardGitPushAsksUnderAuto(t *testing.T) {
	needTools(t, "bash", "jq")
	e := newEnv(t)
	e.install("claude-init/guard-git-push.sh", ".claude/hooks/guard-git-push.sh")
	e.hookSettings("PreToolUse", "Bash", ".claude/hooks/guard-git-push.sh")
	m := e.runAuto(nil, nil, "ship",
		llmtest.CallTool("call_1", "shell", `{"command":"touch pushed.txt; git push origin main"}`),
		llmtest.CallTool("call_2", "shell", `{"command":"touch built.txt"}`),
		llmtest.Reply("ok"))
	if e.exists("pushed.txt") {
		t.Error("git push ran unasked under --approve auto")
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "git push detected — confirm before pushing to remote") || !strings.Contains(got, "no one can be asked") {
		t.Errorf("refusal = %q, want the guard's reason and that no one could be asked", got)
	}
	if _, err := os.Stat(filepath.Join(e.work, "built.txt")); err != nil {
		t.Errorf("a command the guard lets through did not run: %v", err)
	}
}

// TestCorpusGuardEnvAndConfigFiles: the .env guard denies writing .env
// and asks about .env.example; the config guard asks about package.json;
// headless, an ask is a refusal; an ordinary file is written.
func TestCorpusGuardEnvAndConfigFiles(t *testing.T) {
	needTools(t, "bash", "jq")
	e := newEnv(t)
	e.install("claude-init/guard-env.sh", ".claude/hooks/guard-env.sh")
	e.install("claude-init/guard-config-files.sh", ".claude/hooks/guard-config-files.sh")
	e.writeFile(".claude/settings.json", `{"hooks":{"PreToolUse":[{"matcher":"Write|Edit","hooks":[
		{"type":"command","command":".claude/hooks/guard-env.sh"},
		{"type":"command","command":".claude/hooks/guard-config-files.sh"}]}]}}`, 0o644)
	m := e.runAuto(nil, nil, "configure",
		llmtest.CallTool("call_1", "write", `{"path":".env","content":"TOKEN=x"}`),
		llmtest.CallTool("call_2", "write", `{"path":".env.example","content":"TOKEN="}`),
		llmtest.CallTool("call_3", "write", `{"path":"package.json","content":"{}"}`),
		llmtest.CallTool("call_4", "write", `{"path":"notes.md","content":"hi"}`),
		llmtest.Reply("ok"))
	reqs := m.Requests()
	for i, c := range []struct{ file, want string }{
		{".env", ".env is a secret environment file — editing is blocked"},
		{".env.example", ".env.example is committed and shared — confirm before modifying"},
		{"package.json", "package.json is a protected config file — confirm before modifying"},
	} {
		if _, err := os.Stat(filepath.Join(e.work, c.file)); err == nil {
			t.Errorf("%s was written", c.file)
		}
		id := llm.CallID("call_" + string(rune('1'+i)))
		if got := toolResultText(reqs[i+1], id); !strings.Contains(got, c.want) {
			t.Errorf("%s: the model saw %q, want the guard's reason", c.file, got)
		}
	}
	if _, err := os.Stat(filepath.Join(e.work, "notes.md")); err != nil {
		t.Errorf("an ordinary file was not written: %v", err)
	}
}

// TestCorpusGuardMigrationDjango: the guard denies manage.py flush on the
// primary database with its reason; the command never runs.
func TestCorpusGuardMigrationDjango(t *testing.T) {
	needTools(t, "bash", "jq")
	e := newEnv(t)
	e.install("claude-init/guard-migration-django.sh", ".claude/hooks/guard-migration-django.sh")
	e.hookSettings("PreToolUse", "Bash", ".claude/hooks/guard-migration-django.sh")
	m := e.runAuto(nil, nil, "reset the db",
		llmtest.CallTool("call_1", "shell", `{"command":"touch flushed.txt; python manage.py flush"}`),
		llmtest.Reply("ok"))
	if e.exists("flushed.txt") {
		t.Error("the flush ran")
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "manage.py flush is forbidden on the primary database") {
		t.Errorf("the model saw %q", got)
	}
}

// TestCorpusFormatGo: the PostToolUse formatter reads tool_input.file_path
// of a Write and formats the Go file the model wrote.
func TestCorpusFormatGo(t *testing.T) {
	needTools(t, "bash", "jq", "gofmt")
	e := newEnv(t)
	e.install("claude-init/format-go.sh", ".claude/hooks/format-go.sh")
	e.hookSettings("PostToolUse", "Write|Edit", ".claude/hooks/format-go.sh")
	e.runAuto(nil, nil, "write main",
		llmtest.CallTool("call_1", "write", `{"path":"main.go","content":"package main\nfunc main(){println(1)}\n"}`),
		llmtest.Reply("ok"))
	b, err := os.ReadFile(filepath.Join(e.work, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "package main\n\nfunc main() { println(1) }\n"; string(b) != want {
		t.Errorf("main.go = %q, want it formatted: %q", b, want)
	}
}

// TestCorpusSetupPathEnvFile: the SessionStart script writes a PATH entry
// to $CLAUDE_ENV_FILE; the shell commands of the session find the program
// in that directory.
func TestCorpusSetupPathEnvFile(t *testing.T) {
	needTools(t, "bash")
	e := newEnv(t)
	e.install("planet-smars/setup-path.sh", ".claude/hooks/setup-path.sh")
	e.hookSettings("SessionStart", "", ".claude/hooks/setup-path.sh")
	appdata := filepath.Join(e.home, "appdata")
	e.writeFile("../appdata/npm/hello-npm", "#!/bin/sh\necho hello from npm\n", 0o755)
	m := e.runAuto([]string{"APPDATA=" + appdata}, []string{"--sandbox", "off"}, "say hello",
		llmtest.CallTool("call_1", "shell", `{"command":"hello-npm"}`),
		llmtest.Reply("ok"))
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "hello from npm") {
		t.Errorf("the shell did not find the program on the PATH the script set: %q", got)
	}
}

// TestCorpusAutoStagePlugin: the plugin's hooks.json (with
// $CLAUDE_PLUGIN_ROOT) stages each file the model writes or edits.
func TestCorpusAutoStagePlugin(t *testing.T) {
	needTools(t, "node", "git")
	e := newEnv(t)
	e.install("auto-stage/hooks/hooks.json", ".claude/plugins/auto-stage/hooks/hooks.json")
	e.install("auto-stage/auto-stage.js", ".claude/plugins/auto-stage/auto-stage.js")
	if out, err := exec.Command("git", "-C", e.work, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	e.runAuto(nil, nil, "write a",
		llmtest.CallTool("call_1", "write", `{"path":"src/a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	out, err := exec.Command("git", "-C", e.work, "diff", "--cached", "--name-only").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "src/a.txt" {
		t.Errorf("staged = %q, want the written file", got)
	}
}
