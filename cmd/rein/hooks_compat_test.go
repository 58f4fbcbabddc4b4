package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/llmtest"
)

// TestHooksAskUnderAutoIsAsked: a PreToolUse guard answering "ask" for
// git push is put to a person even under --approve auto; with no terminal
// to ask on, the push is refused, not run. The guard is in
// .claude/settings.json, read because the config file says
// hooks_from = "claude" beside a [hooks] table.
func TestHooksAskUnderAutoIsAsked(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeFile("../config/rein/config.toml", `hooks_from = "claude"

[[hooks.PostToolUse]]
matcher = "Bash"
[[hooks.PostToolUse.hooks]]
type = "command"
command = "cat > /dev/null"
`, 0o644)
	e.writeFile(".claude/settings.json", `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"grep -q 'git push' && echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"pushing needs a person\"}}' || true"}]}]}}`, 0o644)
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "shell", `{"command":"echo pushed > pushed.txt; git push origin main"}`),
		llmtest.CallTool("call_2", "shell", `{"command":"echo fine > fine.txt"}`),
		llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "push it")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.work, "pushed.txt")); err == nil {
		t.Fatal("git push ran unasked under --approve auto although a hook answered ask")
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "terminal") {
		t.Errorf("the model saw %q, want a refusal saying no one could be asked", got)
	}
	if _, err := os.Stat(filepath.Join(e.work, "fine.txt")); err != nil {
		t.Errorf("a call the hook did not ask about was not run under --approve auto: %v", err)
	}
}

// TestConfigHookKeysAreKnown: the config keys the hooks documentation
// promises do not make other commands fail with "unknown key".
func TestConfigHookKeysAreKnown(t *testing.T) {
	e := newEnv(t)
	e.writeFile("../config/rein/config.toml", "hooks_from = \"claude\"\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"true\"\n", 0o644)
	r := e.run(nil, "hooks", "list", "--cwd", e.work)
	if r.code != 0 || strings.Contains(r.stderr, "unknown key") {
		t.Fatalf("rein hooks list: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	m := llmtest.NewModel(llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "hi")...); r.code != 0 {
		t.Fatalf("rein run with [hooks] in the config: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestHooksStopReadsTranscript: a "keep going until done" Stop hook reads
// transcript_path (JSON lines as Claude Code writes them) under the
// default SQLite store, finds the last assistant text without the word
// DONE and sends the model back to work once.
func TestHooksStopReadsTranscript(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("Stop", "", e.hookScript("until-done.sh", `in=$(cat)
path=$(printf '%s' "$in" | sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p')
[ -f "$path" ] || { echo "no transcript at '$path'" >&2; exit 1; }
cp "$path" "$REIN_PROJECT_DIR/seen.jsonl"
last=$(grep '"type":"assistant"' "$path" | tail -n 1)
case "$last" in *DONE*) exit 0;; esac
echo '{"decision":"block","reason":"Not done yet: keep going until the task is DONE."}'
`, 0))
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "shell", `{"command":"echo hi"}`),
		llmtest.Reply("working on it"),
		llmtest.Reply("all DONE"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "finish the task")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if n := len(m.Requests()); n != 3 {
		t.Fatalf("requests = %d, want 3: the Stop hook should send the model back once", n)
	}
	if got := strings.Join(transcript(m.Requests()[2]), "\n"); !strings.Contains(got, "keep going until the task is DONE") {
		t.Errorf("the nudge did not reach the model:\n%s", got)
	}
	b, err := os.ReadFile(filepath.Join(e.work, "seen.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"user"`, `"text":"finish the task"`, `"type":"tool_use"`, `"name":"Bash"`, `"type":"tool_result"`, `"text":"all DONE"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the transcript lacks %s:\n%s", want, b)
		}
	}
}

// TestHooksSessionStartEnvFile: a SessionStart script that writes
// "export" lines to $CLAUDE_ENV_FILE sets variables the session's later
// shell commands see.
func TestHooksSessionStartEnvFile(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("SessionStart", "", e.hookScript("env.sh", `cat >/dev/null
[ -n "$CLAUDE_ENV_FILE" ] || { echo "CLAUDE_ENV_FILE is not set" >&2; exit 1; }
echo 'export GREETING=hello-from-hook' >> "$CLAUDE_ENV_FILE"
`, 0))
	m := llmtest.NewModel(llmtest.CallTool("call_1", "shell", `{"command":"echo \"$GREETING\" > greet.txt"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "greet")...)
	if r.code != 0 || strings.Contains(r.stderr, "CLAUDE_ENV_FILE") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(e.work, "greet.txt"))
	if err != nil || strings.TrimSpace(string(b)) != "hello-from-hook" {
		t.Errorf("greet.txt = %q, %v; want the variable the SessionStart hook exported", b, err)
	}
}

// TestHooksUpdatedInputTimeoutIsMilliseconds: a PreToolUse hook that sets
// Bash's timeout to 1000 (milliseconds, as the format has it) gives the
// command one second, not a thousand.
func TestHooksUpdatedInputTimeoutIsMilliseconds(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("PreToolUse", "Bash", e.hookScript("timeout.sh", `cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"timeout":1000}}}'
`, 0))
	m := llmtest.NewModel(llmtest.CallTool("call_1", "shell", `{"command":"sleep 5; echo late"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "wait")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "Timed out after 1s") {
		t.Errorf("the model saw %q, want a timeout after one second", got)
	}
}
