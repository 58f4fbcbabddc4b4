package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sqlite"
	"github.com/reinhq/rein/tool"
)

const crashDirEnv = "REIN_DURABLE_CRASH_DIR"

// The tools of the crash test, as both processes build them: look is
// read-only, touch is not. Each run of a body is told through fn.
func crashTools(look, touch func(ctx context.Context) (*tool.Result, error)) []tool.Tool {
	spec := func(name string, ro bool) tool.Spec {
		s := tool.Spec{Name: name, Description: name + " something", Schema: json.RawMessage(`{"type":"object"}`)}
		if ro {
			s.Annotations = &tool.Annotations{ReadOnly: true}
		}
		return s
	}
	return []tool.Tool{
		&tool.Func{ToolSpec: spec("look", true), Fn: func(ctx context.Context, _ *tool.Call) (*tool.Result, error) { return look(ctx) }},
		&tool.Func{ToolSpec: spec("touch", false), Fn: func(ctx context.Context, _ *tool.Call) (*tool.Result, error) { return touch(ctx) }},
	}
}

// TestDurable_CrashHelperProcess is the child of the crash test: it runs
// a durable turn on SQLite whose two tools block until the process is
// killed. It does nothing in a normal test run.
func TestDurable_CrashHelperProcess(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child of TestDurable_CrashMidToolResumes")
	}
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mark := func(name string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			f.WriteString("ran\n")
			f.Close()
		}
	}
	block := func(name string) func(context.Context) (*tool.Result, error) {
		return func(context.Context) (*tool.Result, error) {
			mark(name)
			select {} // until the kill
		}
	}
	m := llmtest.NewModel(llmtest.CallTools(call("c1", "look", `{}`), call("c2", "touch", `{}`)))
	a, err := agent.New(&agent.Options{Model: m, Provider: llmtest.Provider, ModelName: "scripted", Store: st, Session: "s",
		Tools: crashTools(block("look"), block("touch")), Durable: true, Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	t.Fatal("the turn ended; it should have been killed in its tools")
}

// TestDurable_CrashMidToolResumes kills a process with SIGKILL while its
// durable turn runs two tools, then resumes the turn in this process from
// the reopened store: the read-only call runs again, the other is
// answered as interrupted and never runs twice, and one model call
// finishes the turn.
func TestDurable_CrashMidToolResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	killMidTools(t, dir)
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before := readAll(t, st, "s")
	var looks, touches atomic.Int32
	tools := crashTools(func(context.Context) (*tool.Result, error) {
		looks.Add(1)
		return tool.Text("looked"), nil
	}, func(context.Context) (*tool.Result, error) {
		touches.Add(1)
		return tool.Text("touched"), nil
	})
	m := llmtest.NewModel(llmtest.Reply("recovered"))
	a := durableAgent(t, st, m, nil, tools...)
	res, err := a.Resume(context.Background(), nil)
	if err != nil || res.Reason != session.EndCompleted || res.Text != "recovered" {
		t.Fatalf("Resume = %+v, %v", res, err)
	}
	if m.Calls() != 1 {
		t.Errorf("the resume made %d model calls, want 1", m.Calls())
	}
	ran, _ := os.ReadFile(filepath.Join(dir, "touch"))
	if n := strings.Count(string(ran), "ran"); n != 1 || touches.Load() != 0 {
		t.Errorf("touch ran %d times in the child and %d after the resume; want once in all", n, touches.Load())
	}
	if looks.Load() != 1 {
		t.Errorf("look ran %d times after the resume, want 1", looks.Load())
	}
	evs := balanced(t, st)
	for i, ev := range before {
		if d := diffEvent(ev, evs[i]); d != "" {
			t.Errorf("event %d changed after the resume: %s", ev.Seq, d)
		}
	}
	// The store's repair closed the turn; the resume continues it in a
	// new turn whose first step calls look again under a new id.
	rs := results(evs)
	if r := rs["c1"]; r == nil || r.Code != session.CodeOutcomeUnknown {
		t.Errorf("c1 = %+v, want the repair's result", r)
	}
	if r := rs["c1_dup1"]; r == nil || resultText(r) != "looked" {
		t.Errorf("c1_dup1 = %+v, want the re-run's result", r)
	}
	if r := rs["c2"]; r == nil || r.Code != session.CodeOutcomeUnknown {
		t.Errorf("c2 = %+v, want code %s", r, session.CodeOutcomeUnknown)
	}
	if _, ok := rs["c2_dup1"]; ok {
		t.Error("touch was called again")
	}
	rsm := ofType[*session.TurnResume](evs)
	if len(rsm) != 1 || rsm[0].Continues != "turn-1" || !cmp.Equal(rsm[0].Rerun, []llm.CallID{"c1"}) || !cmp.Equal(rsm[0].Interrupted, []llm.CallID{"c2"}) {
		t.Errorf("turn.resume = %+v, want one continuing turn-1, rerun [c1], interrupted [c2]", rsm)
	}
	req := m.Requests()[0]
	for _, s := range []string{"result c1_dup1: looked", "result c2: " + session.TextOutcomeUnknown} {
		if !containsText(req, s) {
			t.Errorf("the request after the resume lacks %q:\n%v", s, requestTexts(req))
		}
	}
}

// killMidTools starts the child of the crash test in dir and kills it
// with SIGKILL once both its tools run.
func killMidTools(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurable_CrashHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A tool has started once its mark is whole: the file is created
	// before its line is written, and a kill between the two would lose
	// the line the test counts.
	started := func(name string) bool {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.HasSuffix(string(b), "ran\n")
	}
	if !testwait.For(20*time.Second, func() bool { return started("look") && started("touch") }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child's tools never started")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func diffEvent(a, b session.Event) string {
	ja, _ := session.AppendEventJSON(nil, a)
	jb, _ := session.AppendEventJSON(nil, b)
	if string(ja) != string(jb) {
		return string(ja) + " != " + string(jb)
	}
	return ""
}
