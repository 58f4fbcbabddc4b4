package command_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
)

// copyRepo copies testdata/claude-repo into a fresh directory.
func copyRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/claude-repo")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadClaudeSettings(t *testing.T) {
	dir := copyRepo(t)
	entries, err := command.Load(&command.LoadOptions{Dir: dir, Claude: true})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Event, Matcher, Source, Skipped string }
	var got []row
	for _, e := range entries {
		rel, _ := filepath.Rel(dir, e.Source)
		got = append(got, row{e.Event, e.Matcher, rel, e.Skipped()})
	}
	want := []row{
		{"UserPromptSubmit", "", ".claude/settings.json", ""},
		{"PreToolUse", "Bash", ".claude/settings.json", ""},
		{"PostToolUse", "Edit|MultiEdit|Write", ".claude/settings.json", ""},
		{"Notification", "", ".claude/settings.json", "event Notification is not supported by rein"},
		{"Stop", "", ".claude/settings.local.json", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	// The user's settings come before the workspace's, with the switch.
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	user := `{"hooks":{"PreToolUse":[{"matcher":"TodoWrite","hooks":[{"type":"command","command":"true"}]}]}}`
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	withUser, err := command.Load(&command.LoadOptions{Dir: dir, Claude: true, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if len(withUser) != len(entries)+1 || withUser[0].Matcher != "TodoWrite" || withUser[0].Source != filepath.Join(home, ".claude", "settings.json") {
		t.Errorf("with the user's settings: %d entries, first %+v; want %d, the user's first", len(withUser), withUser[0], len(entries)+1)
	}
	if only, _ := command.Load(&command.LoadOptions{Dir: dir, Home: home}); len(only) != 0 {
		t.Errorf("without the switch the user's settings gave %d entries", len(only))
	}
	// Without the switch, .claude is not read.
	none, err := command.Load(&command.LoadOptions{Dir: dir})
	if err != nil || len(none) != 0 {
		t.Errorf("Load without Claude = %d entries, %v; want none", len(none), err)
	}
}

// TestClaudeSettingsWorkUnchanged runs a typical repository's
// .claude/settings.json: the rm -rf guard, a formatter after edits and a
// prompt log.
func TestClaudeSettingsWorkUnchanged(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq not installed; the sample hooks use it")
	}
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("gofmt not installed")
	}
	dir := copyRepo(t)
	entries, err := command.Load(&command.LoadOptions{Dir: dir, Claude: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := command.New(entries, &command.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	policy := &sandbox.Policy{Root: dir}
	sh := shell.New(&shell.Options{Policy: policy})
	defer sh.Close()
	tools := append(fs.NewTools(policy, nil), sh.Tools()...)
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"rm -rf build"}`),
		llmtest.CallTool("c2", "write", `{"path":"main.go","content":"package main\nfunc main(){println( 1 )}\n"}`),
		llmtest.CallTool("c3", "shell", `{"command":"echo fine"}`),
		llmtest.Reply("done"),
	)
	a, err := agent.New(&agent.Options{Model: m, Tools: tools, Hooks: r.Hooks(), Notices: r.Notices})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), &agent.RunRequest{Prompt: "tidy the repo"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"gate-block|BLOCKED|Blocked: rm -rf is not allowed in this repository; delete specific files instead",
		"execute||",
		"execute||",
	}
	got := toolResults(res)
	for i := range got {
		if i > 0 {
			got[i] = got[i][:strings.LastIndex(got[i], "|")+1]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if !exists(filepath.Join(dir, "build")) {
		t.Error("build/ was deleted")
	}
	src, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	if diff := cmp.Diff("package main\n\nfunc main() { println(1) }\n", string(src)); diff != "" {
		t.Errorf("main.go not formatted by the PostToolUse hook (-want +got):\n%s", diff)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".claude", "prompts.log"))
	if want := `{"session":"` + string(a.Session()) + `","prompt":"tidy the repo"}` + "\n"; string(log) != want {
		t.Errorf("prompts.log = %q, want %q", log, want)
	}
	stops, _ := os.ReadFile(filepath.Join(dir, ".claude", "stops.log"))
	if string(stops) != "stop\n" {
		t.Errorf("stops.log = %q, want one stop", stops)
	}
	if res.Reason != session.EndCompleted {
		t.Errorf("end = %q", res.Reason)
	}
}
