package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sqlite"
)

// Published PreToolUse scripts that rewrite a call's input with
// updatedInput, run unchanged (see hook/command/testdata/corpus/PROVENANCE.md).

// sessionLog reads session id from the test's SQLite store.
func sessionLog(t *testing.T, e *env, id session.ID) []session.Event {
	t.Helper()
	st, err := sqlite.Open(strings.TrimPrefix(e.store, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, _ := readLog(t, st, id)
	return evs
}

// ranWith returns the arguments each call ran with, by call id, from the
// log's tool.call events.
func ranWith(t *testing.T, evs []session.Event) map[llm.CallID]map[string]any {
	t.Helper()
	out := map[llm.CallID]map[string]any{}
	for _, ev := range evs {
		if c, ok := ev.Data.(*session.ToolCall); ok {
			var m map[string]any
			if err := json.Unmarshal(c.Args, &m); err != nil {
				t.Fatalf("call %s ran with %s: %v", c.CallID, c.Args, err)
			}
			out[c.CallID] = m
		}
	}
	return out
}

// TestCorpusDefaultTimeoutSetter: the script reads tool_input.timeout in
// milliseconds and gives a Bash call without one 120000 ms. Under rein a
// call asking 0.5 s is shown to it as 500 ms and comes back as such: the
// command is stopped after half a second, not 500 of them; a call with no
// timeout runs with the script's two minutes.
func TestCorpusDefaultTimeoutSetter(t *testing.T) {
	needTools(t, "bash", "jq")
	e := newEnv(t)
	e.install("skillforge/default-timeout-setter.sh", ".claude/hooks/default-timeout-setter.sh")
	e.hookSettings("PreToolUse", "Bash", ".claude/hooks/default-timeout-setter.sh")
	began := time.Now()
	m := e.runAuto(nil, []string{"--new-session", "s-timeout"}, "build it",
		llmtest.CallTool("call_1", "shell", `{"command":"sleep 30; touch late.txt","timeout":0.5}`),
		llmtest.CallTool("call_2", "shell", `{"command":"echo built","description":"build"}`),
		llmtest.Reply("ok"))
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the run took %s: the half-second limit was not honoured", took)
	}
	if e.exists("late.txt") {
		t.Error("the command outlived its time limit")
	}
	reqs := m.Requests()
	if got := toolResultText(reqs[1], "call_1"); !strings.Contains(got, "Timed out after 500ms") {
		t.Errorf("call_1 result = %q, want it timed out after 500ms", got)
	}
	if got := toolResultText(reqs[2], "call_2"); !strings.Contains(got, "built") {
		t.Errorf("call_2 result = %q, want its output", got)
	}
	want := map[llm.CallID]map[string]any{
		"call_1": {"command": "sleep 30; touch late.txt", "timeout": 0.5},
		"call_2": {"command": "echo built", "description": "build", "timeout": 120.0},
	}
	evs := sessionLog(t, e, "s-timeout")
	if diff := cmp.Diff(want, ranWith(t, evs)); diff != "" {
		t.Errorf("arguments the calls ran with, in seconds (-want +got):\n%s", diff)
	}
	for _, ev := range evs {
		if r, ok := ev.Data.(*session.ToolResult); ok && r.CallID == "call_1" {
			if r.Duration < 400*time.Millisecond || r.Duration > 10*time.Second {
				t.Errorf("call_1 ran %s, want about 500ms", r.Duration)
			}
		}
	}
}

// TestCorpusPensieveTodoMemoryCheck: the TodoWrite hook reads
// tool_input.todos, prepends a "Search Pensieve" todo (with activeForm)
// while anything is pending, keeps the not-completed list in its state
// file under ~/.claude/state, merges that state into the next write, and
// tells the user (systemMessage) what it preserved and to record
// learnings once something is completed.
func TestCorpusPensieveTodoMemoryCheck(t *testing.T) {
	needTools(t, "python3")
	e := newEnv(t)
	e.install("pensieve/todo-memory-check.py", ".claude/hooks/todo-memory-check.py")
	// The script logs to ~/.claude/logs, creating only the last folder:
	// ~/.claude is there wherever Claude Code has run.
	if err := os.Mkdir(filepath.Join(e.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.hookSettings("PreToolUse", "TodoWrite", ".claude/hooks/todo-memory-check.py")
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "todo", `{"items":[{"content":"Write the parser","status":"pending"}]}`),
		llmtest.CallTool("call_2", "todo", `{"items":[{"content":"Write the parser","status":"completed"}]}`),
		llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	args := []string{"--hooks-from", "claude", "--approve", "auto", "--new-session", "s-todo", "plan it"}
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	pensieve := "Search Pensieve for related memories"
	item := func(content, status string) map[string]any {
		return map[string]any{"content": content, "status": status}
	}
	want := map[llm.CallID]map[string]any{
		"call_1": {"items": []any{item(pensieve, "pending"), item("Write the parser", "pending")}},
		"call_2": {"items": []any{item("Write the parser", "completed"), item(pensieve, "pending")}},
	}
	if diff := cmp.Diff(want, ranWith(t, sessionLog(t, e, "s-todo"))); diff != "" {
		t.Errorf("the lists the todo tool was given (-want +got):\n%s", diff)
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, pensieve) {
		t.Errorf("the model was not shown the added todo: %q", got)
	}
	for _, msg := range []string{"Preserved 1 todo(s) from previous state", "MEMORY CHECK: Evaluate if you should record learnings to Pensieve"} {
		if !strings.Contains(r.stderr, msg) {
			t.Errorf("the user was not shown %q; stderr:\n%s", msg, r.stderr)
		}
	}
	states, err := filepath.Glob(filepath.Join(e.home, ".claude", "state", "*", "current_todos.json"))
	if err != nil || len(states) != 1 {
		t.Fatalf("state files = %v (%v), want one for the workspace", states, err)
	}
	project, err := os.ReadFile(filepath.Join(filepath.Dir(states[0]), "project.txt"))
	if err != nil || string(project) != e.work {
		t.Errorf("the state is kept for %q (%v), want the workspace %q", project, err, e.work)
	}
	var kept []map[string]string
	b, err := os.ReadFile(states[0])
	if err == nil {
		err = json.Unmarshal(b, &kept)
	}
	if err != nil {
		t.Fatal(err)
	}
	wantKept := []map[string]string{{"content": pensieve, "activeForm": "Searching Pensieve for related memories", "status": "pending"}}
	if diff := cmp.Diff(wantKept, kept); diff != "" {
		t.Errorf("the hook's state file (-want +got):\n%s", diff)
	}
}
