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
