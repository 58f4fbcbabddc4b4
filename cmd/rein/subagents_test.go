package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

// subagentScript serves a parent that spawns the named agent "counter"
// and a child that answers; a child's request is told by its system
// prompt, the definition's body.
func subagentScript() *llmtest.Model {
	var step atomic.Int32
	parent := []llmtest.Entry{
		llmtest.CallTool("call_1", "spawn_agent", `{"task":"count the files","agent":"counter"}`),
		llmtest.Reply("There are 3 files."),
	}
	route := llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		for _, s := range req.System {
			if isChild(s.Text) {
				return llmtest.Reply("3 files")
			}
		}
		return parent[min(int(step.Add(1))-1, len(parent)-1)]
	})
	return llmtest.NewModel(route, route, route)
}

func isChild(system string) bool { return strings.Contains(system, "You count files.") }

func writeCounter(t *testing.T, e *env) {
	t.Helper()
	dir := filepath.Join(e.work, ".rein", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: counter\ndescription: Counts files.\ntools: ls\n---\nYou count files.\n"
	if err := os.WriteFile(filepath.Join(dir, "counter.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runSubagent runs rein with the spawn tool and the counter agent.
func runSubagent(t *testing.T, flags ...string) (result, *llmtest.Model, *env) {
	t.Helper()
	e := newEnv(t)
	writeCounter(t, e)
	w := wires[0]
	m := subagentScript()
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, append(flags, "--tools", "ls,spawn_agent", "how many files?")...)...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	return r, m, e
}

func TestRunSubagentJSON(t *testing.T) {
	r, m, _ := runSubagent(t, "--json")
	reqs := m.Requests()
	if len(reqs) != 3 || len(reqs[1].System) == 0 || !isChild(reqs[1].System[0].Text) {
		t.Fatalf("want the parent's, the child's and the parent's requests; got %d", len(reqs))
	}
	if got := toolResultText(reqs[2], "call_1"); got != "3 files" {
		t.Errorf("the parent's next request carries %q as the spawn's result; want the child's answer", got)
	}
	var parent, child session.ID
	childEvents := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		ev, err := session.DecodeEvent([]byte(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if st, ok := ev.Data.(*session.SubagentStart); ok {
			parent, child = ev.Session, st.ChildSession
			if st.Depth != 1 || st.Name != "counter" {
				t.Errorf("subagent.start = %+v", st)
			}
		}
		if ev.ParentRun != "" {
			childEvents++
			if ev.Agent != "counter" {
				t.Errorf("a child event names agent %q", ev.Agent)
			}
		}
	}
	if child == "" || parent == child || childEvents == 0 {
		t.Errorf("--json shows no child events (subagent.start child %q, %d events with parent_run):\n%s", child, childEvents, r.stdout)
	}
}

func TestRunSubagentText(t *testing.T) {
	r, _, e := runSubagent(t)
	if !strings.Contains(r.stderr, "[counter] ended completed") || !strings.Contains(r.stderr, "→ spawn_agent") {
		t.Errorf("stderr does not show the child's progress:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "There are 3 files.") {
		t.Errorf("stdout = %q", r.stdout)
	}
	parent := strings.TrimSpace(r.stderr[strings.LastIndex(r.stderr, "session ")+len("session "):])
	show := e.run(nil, "sessions", "show", parent, "--store", e.store)
	if show.code != 0 || !strings.Contains(show.stdout, "subagents:\n  counter (session ") || !strings.Contains(show.stdout, "): completed, 1 step, 15 tokens") {
		t.Errorf("sessions show does not show the child:\n%s%s", show.stdout, show.stderr)
	}
}
