package command_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm/llmtest"
)

// TestPluginHooksJSON: a plugin folder's hooks/hooks.json, in the plugin
// format (a description beside "hooks"), is loaded, and its command finds
// its script through ${CLAUDE_PLUGIN_ROOT}.
func TestPluginHooksJSON(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, ".claude", "plugins", "write-guard")
	mustWrite(t, filepath.Join(root, "hooks", "hooks.json"), `{
  "description": "Refuses writes to generated files",
  "hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [
    {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/guard.sh", "timeout": 10}]}]}}`, 0o644)
	mustWrite(t, filepath.Join(root, "scripts", "guard.sh"), `#!/bin/sh
if grep -q '"file_path":"gen/'; then
  echo "gen/ is generated; edit the template instead ($CLAUDE_PLUGIN_ROOT)" >&2
  exit 2
fi
`, 0o755)
	entries, err := command.Load(&command.LoadOptions{Dir: dir, Claude: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].PluginRoot != root {
		t.Fatalf("entries = %+v, want the plugin's one hook with its root", entries)
	}
	r := newRigEntries(t, dir, entries, nil,
		llmtest.CallTool("c1", "write", `{"path":"gen/a.go","content":"x"}`),
		llmtest.CallTool("c2", "write", `{"path":"b.go","content":"x"}`),
		llmtest.Reply("ok"))
	r.run(t, "go")
	if r.exists("gen/a.go") || !r.exists("b.go") {
		t.Errorf("gen/a.go written = %v, b.go written = %v; want only b.go", r.exists("gen/a.go"), r.exists("b.go"))
	}
	if got := lastRequestText(r.model); !strings.Contains(got, "edit the template instead ("+root+")") {
		t.Errorf("the model did not see the plugin hook's reason with its root:\n%s", got)
	}
	if none, _ := command.Load(&command.LoadOptions{Dir: dir}); len(none) != 0 {
		t.Errorf("a .claude plugin was loaded without Claude: %+v", none)
	}
}

func mustWrite(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}
