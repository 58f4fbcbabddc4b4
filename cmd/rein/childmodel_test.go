package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

// A definition written for Claude Code runs as written: its model alias
// resolves like --model, and its tool names are rein's tools.
func TestRunSubagentDefinitionModelAndToolNames(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.work, ".claude", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: counter\ndescription: Counts files.\ntools: LS, Read\nmodel: haiku\n---\nYou count files.\n"
	if err := os.WriteFile(filepath.Join(dir, "counter.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	w := wires[0]
	m := subagentScript()
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, "--tools", "ls,read,grep,spawn_agent", "how many files?")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != 3 || !isChild(reqs[1].System[0].Text) {
		t.Fatalf("%d requests, want the parent's, the child's, the parent's", len(reqs))
	}
	if reqs[0].Model != "claude-sonnet-4-5" || reqs[1].Model != "claude-haiku-4-5" {
		t.Errorf("models: parent %q, child %q; want claude-sonnet-4-5 and claude-haiku-4-5", reqs[0].Model, reqs[1].Model)
	}
	if diff := cmp.Diff([]string{"ls", "read"}, toolNamesOf(reqs[1])); diff != "" {
		t.Errorf("the child's tools (-want +got):\n%s", diff)
	}
	if got := toolResultText(reqs[2], "call_1"); got != "3 files" {
		t.Errorf("the spawn's result = %q", got)
	}
}

// A definition naming a model rein cannot use fails the spawn with the
// reason, as the tool's result; the parent goes on.
func TestRunSubagentUnknownModel(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.work, ".rein", "agents")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "counter.md"), []byte("---\nname: counter\ndescription: Counts.\nmodel: acme/x\n---\nYou count files.\n"), 0o644)
	w := wires[0]
	m := llmtest.NewModel(llmtest.CallTool("call_1", "spawn_agent", `{"task":"count","agent":"counter"}`), llmtest.Reply("Could not."))
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, "--tools", "ls,spawn_agent", "count")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, `names the model "acme/x"`) || !strings.Contains(got, "unknown provider") {
		t.Errorf("the spawn's result = %q", got)
	}
}

func toolNamesOf(req *llm.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

// --json shows a child's events as they happen, in order: all of them
// before the parent's subagent.end, its text deltas named.
func TestRunJSONChildEventsComeBeforeTheirEnd(t *testing.T) {
	r, _, _ := runSubagent(t, "--json")
	childTurnEnded, childDelta := false, false
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var d jsonDelta
		if json.Unmarshal([]byte(line), &d) == nil && d.Type == "text.delta" {
			if d.Agent == "counter" && d.Session != "" && d.Text == "3 files" {
				childDelta = true
			}
			continue
		}
		if strings.HasPrefix(line, `{"type":"result"`) {
			continue
		}
		ev, err := session.DecodeEvent([]byte(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch ev.Data.(type) {
		case *session.SubagentEnd:
			if !childTurnEnded {
				t.Errorf("subagent.end came before the child's turn.end")
			}
		case *session.TurnEnd:
			if ev.Agent == "counter" && ev.ParentRun != "" {
				childTurnEnded = true
			}
		}
	}
	if !childDelta {
		t.Errorf("no text.delta line naming the child:\n%s", r.stdout)
	}
}
