package command_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
	"github.com/reinhq/rein/tool/todo"
)

// corpusRun installs the unchanged third-party plugin under
// testdata/corpus (see PROVENANCE.md there) as a plugin of a workspace's
// .claude/plugins, and runs the model's script with the shell tool.
func corpusRun(t *testing.T, plugin string, env []string, script ...llmtest.Entry) (dir, home string, m *llmtest.Model) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed; the plugin's hook is a node script")
	}
	dir, home = t.TempDir(), t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, ".claude", "plugins", plugin), os.DirFS(filepath.Join("testdata", "corpus", plugin))); err != nil {
		t.Fatal(err)
	}
	entries, err := command.Load(&command.LoadOptions{Dir: dir, Claude: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := command.New(entries, &command.Options{Dir: dir, PermissionMode: "bypassPermissions",
		BaseEnv: append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	sh := shell.New(&shell.Options{Policy: &sandbox.Policy{Root: dir}})
	t.Cleanup(func() { sh.Close() })
	m = llmtest.NewModel(script...)
	a, err := agent.New(&agent.Options{Model: m, Tools: sh.Tools(), Hooks: r.Hooks(), Notices: r.Notices})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Run(t.Context(), &agent.RunRequest{Prompt: "clean up"}); err != nil {
		t.Fatal(err)
	}
	return dir, home, m
}

// TestCorpusBlockDangerousCommands: the plugin denies git reset --hard
// (it checks tool_name == "Bash") with its reason, lets a plain command
// run, and logs the permission_mode it was told.
func TestCorpusBlockDangerousCommands(t *testing.T) {
	dir, home, m := corpusRun(t, "block-dangerous-commands", nil,
		llmtest.CallTool("c1", "shell", `{"command":"git reset --hard && touch reset.txt"}`),
		llmtest.CallTool("c2", "shell", `{"command":"touch ok.txt"}`),
		llmtest.Reply("done"))
	if _, err := os.Stat(filepath.Join(dir, "reset.txt")); err == nil {
		t.Error("git reset --hard ran despite the plugin's deny")
	}
	if _, err := os.Stat(filepath.Join(dir, "ok.txt")); err != nil {
		t.Errorf("a harmless command did not run: %v", err)
	}
	if got := lastRequestText(m); !strings.Contains(got, "[git-reset-hard] git reset --hard loses uncommitted work") {
		t.Errorf("the model did not see the plugin's reason:\n%s", got)
	}
	logs, _ := filepath.Glob(filepath.Join(home, ".claude", "hooks-logs", "*.jsonl"))
	var log string
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		log += string(b)
	}
	if !strings.Contains(log, `"permission_mode":"bypassPermissions"`) || !strings.Contains(log, `"decision":"deny"`) {
		t.Errorf("the plugin's log = %q, want a deny with the permission_mode it was told", log)
	}
}

// TestCorpusBlockDangerousCommandsAsk: with the author's HOOK_ASK_HIGH
// switch the plugin answers ask; with no approver that is a refusal.
func TestCorpusBlockDangerousCommandsAsk(t *testing.T) {
	dir, _, m := corpusRun(t, "block-dangerous-commands", []string{"HOOK_ASK_HIGH=true"},
		llmtest.CallTool("c1", "shell", `{"command":"git reset --hard && touch reset.txt"}`),
		llmtest.Reply("done"))
	if _, err := os.Stat(filepath.Join(dir, "reset.txt")); err == nil {
		t.Error("an ask with no approver ran the command")
	}
	if got := lastRequestText(m); !strings.Contains(got, "no approver") {
		t.Errorf("the model saw:\n%s", got)
	}
}

// TestCorpusProtectMainBranchInReinSettings: a script that answers only
// when tool_name is "Bash", listed in rein's own .rein/settings.json,
// denies a push to main.
func TestCorpusProtectMainBranchInReinSettings(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed; the hook is a node script")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "corpus", "scripts", "protect-main-branch.js"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	settings := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"node ` + script + `"}]}]}}`
	entries, err := command.Parse([]byte(settings), filepath.Join(dir, ".rein", "settings.json"), false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := command.New(entries, &command.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sh := shell.New(&shell.Options{Policy: &sandbox.Policy{Root: dir}})
	defer sh.Close()
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"touch pushed.txt; git push origin main"}`),
		llmtest.Reply("done"))
	a, err := agent.New(&agent.Options{Model: m, Tools: sh.Tools(), Hooks: r.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Run(t.Context(), &agent.RunRequest{Prompt: "ship it"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pushed.txt")); err == nil {
		t.Error("the push ran: the script was not told tool_name Bash")
	}
	if got := lastRequestText(m); !strings.Contains(got, "[push-main] Pushing to main is not allowed") {
		t.Errorf("the model saw:\n%s", got)
	}
}

// TestTodoWriteMatcher: a PostToolUse hook on TodoWrite, as such scripts
// are written (tool_name "TodoWrite", tool_input.todos and
// tool_response.newTodos), runs after rein's todo tool.
func TestTodoWriteMatcher(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "seen.json")
	settings := `{"hooks":{"PostToolUse":[{"matcher":"TodoWrite","hooks":[{"type":"command","command":"cat > ` + out + `"}]}]}}`
	entries, err := command.Parse([]byte(settings), ".claude/settings.json", true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := command.New(entries, &command.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "todo", `{"items":[{"content":"write the test","status":"in_progress"}]}`),
		llmtest.Reply("done"))
	a, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{todo.New(nil)}, Hooks: r.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Run(t.Context(), &agent.RunRequest{Prompt: "plan"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the TodoWrite hook did not run: %v", err)
	}
	var in struct {
		ToolName  string `json:"tool_name"`
		ToolInput struct {
			Todos []map[string]string `json:"todos"`
		} `json:"tool_input"`
		ToolResponse struct {
			NewTodos []map[string]string `json:"newTodos"`
		} `json:"tool_response"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if in.ToolName != "TodoWrite" || len(in.ToolInput.Todos) != 1 || in.ToolInput.Todos[0]["content"] != "write the test" || len(in.ToolResponse.NewTodos) != 1 {
		t.Errorf("the hook read %s", b)
	}
}
