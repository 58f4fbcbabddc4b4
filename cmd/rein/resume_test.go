package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sqlite"
)

// TestRunResumeAfterKill kills rein run with SIGKILL while its second
// model request is in flight, then continues the turn with
// rein run --session ID --resume: a resume with other tools is refused
// with a usage error, the right one makes only the request that had not
// been answered (the listing's result is not run again), and a resume of
// a finished turn says there is nothing to continue.
func TestRunResumeAfterKill(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "ls", `{"path":"."}`),
		llmtest.Hang(),
		llmtest.Reply("Resumed after the crash."),
	)
	srv := llmtest.NewServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.cmd(ctx, w.env(), w.args(srv, e, "--new-session", "s-kill", "list the files")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testwait.For(30*time.Second, func() bool { return m.Calls() >= 2 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the second request never came (%d requests)", m.Calls())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	r := e.run(w.env(), w.args(srv, e, "--session", "s-kill", "--resume", "--tools", "ls,read")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "resume it with the same --tools") {
		t.Fatalf("resume with other tools: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if m.Calls() != 2 {
		t.Fatalf("a refused resume sent a request (%d in all)", m.Calls())
	}
	r = e.run(w.env(), w.args(srv, e, "--session", "s-kill", "--resume")...)
	if r.code != 0 || !strings.Contains(r.stdout, "Resumed after the crash.") {
		t.Fatalf("resume: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests in all, want 3 (the resume sends only the unanswered one)", len(reqs))
	}
	if !hasToolResult(reqs[2], "call_1") || !strings.Contains(strings.Join(transcript(reqs[2]), "\n"), "list the files") {
		t.Errorf("the resumed request lacks the prompt or the listing:\n%s", strings.Join(transcript(reqs[2]), "\n"))
	}
	st, err := sqlite.Open(strings.TrimPrefix(e.store, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var evs []session.Event
	for ev, err := range st.Events(ctx, "s-kill", 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	st.Close()
	if err := session.Balanced(evs); err != nil {
		t.Errorf("log not balanced: %v", err)
	}
	calls := 0
	for _, ev := range evs {
		if c, ok := ev.Data.(*session.ToolCall); ok && c.Name == "ls" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("ls started %d times, want once", calls)
	}
	r = e.run(w.env(), w.args(srv, e, "--session", "s-kill", "--resume")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "has no turn to continue") {
		t.Errorf("second resume: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = e.run(w.env(), w.args(srv, e, "--resume", "and a prompt")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "takes no PROMPT") {
		t.Errorf("resume with a prompt: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
