package acp_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/acp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

// An editor that offers terminals runs the shell tool's commands, without
// the secrets rein was given.
func TestShellRunsInEditorTerminal(t *testing.T) {
	t.Setenv("REIN_TEST_API_KEY", "sekrit")
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"echo hi $REIN_TEST_API_KEY; exit 3"}`),
		llmtest.Reply("It failed."),
	)
	h := start(t, m, session.NewMemStore(), t.TempDir(), acp.OptionAllowOnce)
	h.caps = sdk.ClientCapabilities{Terminal: true}
	h.client.RunTerminals()
	ctx := ctxT(t)
	id := h.newSession(ctx)
	if got := h.prompt(ctx, id, "run it"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q", got)
	}
	var updates, terms []string
	for _, line := range h.client.Trace() {
		// Terminal requests and updates travel apart; each keeps its order.
		if strings.HasPrefix(line, "terminal ") {
			terms = append(terms, line)
			continue
		}
		updates = append(updates, regexp.MustCompile(`took [0-9.]+[µm]?s`).ReplaceAllString(line, "took T"))
	}
	want := []string{
		"tool_call c1 execute pending \"Run `echo hi $REIN_TEST_API_KEY; exit 3`\"",
		"permission c1 allow-once",
		"update c1 in_progress",
		"update c1 terminal term1",
		`update c1 failed "hi\n\nExit code 3 (took T)."`,
		"agent: It failed.",
	}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if len(terms) != 2 || !strings.HasPrefix(terms[0], "terminal bash -c echo hi $REIN_TEST_API_KEY; exit 3 [") ||
		!strings.Contains(terms[0], "REIN_TEST_API_KEY= ") && !strings.HasSuffix(terms[0], "REIN_TEST_API_KEY=]") || terms[1] != "terminal term1 released" {
		t.Errorf("terminal requests = %q; want the command with REIN_TEST_API_KEY blanked, then its release", terms)
	}
}

// An editor that serves files shows the model its unsaved buffer on a
// read, and rein's writes and edits go through it.
func TestFilesThroughTheEditor(t *testing.T) {
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "read", `{"path":"a.txt"}`),
		llmtest.CallTool("c2", "write", `{"path":"a.txt","content":"new\n"}`),
		llmtest.CallTool("c3", "edit", `{"path":"a.txt","old_string":"new","new_string":"newer"}`),
		llmtest.CallTool("c4", "write", `{"path":"sub/b.txt","content":"b\n"}`),
		llmtest.Reply("Done."),
	)
	h, a := filesEditor(t, m, acp.OptionAllowOnce, acp.OptionAllowOnce, acp.OptionAllowOnce)
	dir := filepath.Dir(a)
	h.client.SetBuffer(a, "unsaved\n")
	h.turn("rewrite a.txt")
	var fsLines []string
	for _, line := range h.client.Trace() {
		if strings.HasPrefix(line, "fs ") {
			fsLines = append(fsLines, line)
		}
	}
	b := filepath.Join(dir, "sub", "b.txt")
	if diff := cmp.Diff([]string{"fs read " + a, "fs write " + a, "fs write " + a, "fs write " + b}, fsLines); diff != "" {
		t.Errorf("file requests (-want +got):\n%s", diff)
	}
	reqs := m.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	seen := toolResultText(reqs[1], "c1")
	if !strings.Contains(seen, "1\ton disk") || !strings.Contains(seen, "unsaved changes") || !strings.Contains(seen, "unsaved\n") {
		t.Errorf("the model's read of a.txt = %q; want the file and the editor's unsaved buffer", seen)
	}
	if buf, _ := h.client.Buffer(a); buf != "newer\n" {
		t.Errorf("editor buffer after the write and the edit = %q, want the new content", buf)
	}
	if got := toolResultText(reqs[4], "c3"); !strings.HasPrefix(got, "Edited a.txt: replaced 1 occurrence.") {
		t.Errorf("the edit's result = %q", got)
	}
}

// Writes and edits go through the editor only: when it refuses one, the
// model is told why and the file on disk is as it was.
func TestEditorRefusesWrite(t *testing.T) {
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "read", `{"path":"a.txt"}`),
		llmtest.CallTool("c2", "edit", `{"path":"a.txt","old_string":"on disk","new_string":"changed"}`),
		llmtest.CallTool("c3", "write", `{"path":"fresh.txt","content":"x"}`),
		llmtest.Reply("The editor refused."),
	)
	h, a := filesEditor(t, m, acp.OptionAllowOnce, acp.OptionAllowOnce)
	dir := filepath.Dir(a)
	h.client.RefuseWrites("the buffer is read-only")
	h.turn("change a.txt")
	reqs := m.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	for _, call := range []llm.CallID{"c2", "c3"} {
		if got := toolResultText(reqs[3], call); !strings.Contains(got, "the editor did not write the file") || !strings.Contains(got, "read-only") {
			t.Errorf("%s result = %q; want the editor's refusal", call, got)
		}
	}
	if b, _ := os.ReadFile(a); string(b) != "on disk\n" {
		t.Errorf("a.txt = %q after a refused edit; want it unchanged", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh.txt")); !os.IsNotExist(err) {
		t.Errorf("fresh.txt after a refused write: %v; want it absent", err)
	}
}

// filesEditor connects an editor that serves files to a workspace that
// holds a.txt, whose path it returns.
func filesEditor(t *testing.T, m llm.Model, answers ...string) (*harness, string) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, m, session.NewMemStore(), dir, answers...)
	h.caps = sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}
	h.client.ServeFiles()
	return h, a
}

// turn opens a session and runs one prompt to the end of its turn.
func (h *harness) turn(prompt string) {
	h.t.Helper()
	ctx := ctxT(h.t)
	if got := h.prompt(ctx, h.newSession(ctx), prompt); got != sdk.StopReasonEndTurn {
		h.t.Errorf("stop reason = %q", got)
	}
}

// toolResultText is the text of the result for call in req's messages.
func toolResultText(req *llm.Request, call llm.CallID) string {
	var b strings.Builder
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			if r, ok := p.(*llm.ToolResult); ok && r.CallID == call {
				for _, rp := range r.Parts {
					if tx, ok := rp.(*llm.Text); ok {
						b.WriteString(tx.Text)
					}
				}
			}
		}
	}
	return b.String()
}

// A cancel while a command runs in the editor's terminal kills and
// releases the terminal.
func TestCancelInEditorTerminal(t *testing.T) {
	m := llmtest.NewModel(llmtest.CallTool("c1", "shell", `{"command":"sleep 30"}`), llmtest.Reply("never sent"))
	h := start(t, m, session.NewMemStore(), t.TempDir(), acp.OptionAllowOnce)
	h.caps = sdk.ClientCapabilities{Terminal: true}
	h.client.RunTerminals()
	ctx := ctxT(t)
	id := h.newSession(ctx)
	inTerminal := func(u sdk.SessionUpdate) bool {
		return u.ToolCallUpdate != nil && len(u.ToolCallUpdate.Content) == 1 && u.ToolCallUpdate.Content[0].Terminal != nil
	}
	h.cancelWhen(ctx, id, inTerminal)
	tr := h.client.Trace()
	if !slices.Contains(tr, "terminal term1 released") {
		t.Errorf("the terminal was not released; trace:\n%s", strings.Join(tr, "\n"))
	}
	failed := slices.ContainsFunc(tr, func(l string) bool { return strings.HasPrefix(l, "update c1 failed") })
	if !failed {
		t.Errorf("the cancelled call has no failed update; trace:\n%s", strings.Join(tr, "\n"))
	}
}

// An editor that offers terminals runs background commands too: the task
// tools reach them by their ids, and closing the session releases their
// terminals.
func TestBackgroundShellInEditorTerminal(t *testing.T) {
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"echo started; sleep 0.2; echo finished","run_in_background":true}`),
		llmtest.CallTool("c2", "task_wait", `{"id":"e1","timeout":20}`),
		llmtest.CallTool("c3", "task_output", `{"id":"e1"}`),
		llmtest.CallTool("c4", "shell", `{"command":"sleep 30","run_in_background":true}`),
		llmtest.CallTool("c5", "task_kill", `{"id":"e2"}`),
		llmtest.CallTool("c6", "task_output", `{"id":"t1"}`),
		llmtest.Reply("Both done."),
	)
	h := start(t, m, session.NewMemStore(), t.TempDir(), acp.OptionAllowAlways, acp.OptionAllowOnce)
	h.caps = sdk.ClientCapabilities{Terminal: true}
	h.client.RunTerminals()
	ctx := ctxT(t)
	id := h.newSession(ctx)
	if got := h.prompt(ctx, id, "run them"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q", got)
	}
	reqs := m.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d model requests, want 7", len(reqs))
	}
	last := reqs[6]
	want := map[llm.CallID]string{
		"c1": `Started background task e1 in the editor's terminal. Check on it with task_output, task_wait or task_kill using id "e1".`,
		"c2": "Background task e1 (echo started; sleep 0.2; echo finished) exited with code 0.\nNew output:\nstarted\nfinished",
		"c3": "Background task e1 (echo started; sleep 0.2; echo finished) exited with code 0.\n(no new output)",
		"c4": `Started background task e2 in the editor's terminal. Check on it with task_output, task_wait or task_kill using id "e2".`,
		"c5": "Background task e2 (sleep 30) was killed by a signal (signal: killed).\n(no new output)",
		"c6": `there is no background task "t1" (none are running)`,
	}
	for call, w := range want {
		if got := toolResultText(last, call); got != w {
			t.Errorf("%s: %q\nwant %q", call, got, w)
		}
	}
	var terms []string
	for _, line := range h.client.Trace() {
		if strings.HasPrefix(line, "terminal ") {
			terms = append(terms, regexp.MustCompile(` \[.*\]$`).ReplaceAllString(line, ""))
		}
	}
	if _, err := h.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	for _, line := range h.client.Trace() {
		if strings.HasSuffix(line, " released") {
			terms = append(terms, line)
		}
	}
	wantTerms := []string{"terminal bash -c echo started; sleep 0.2; echo finished", "terminal bash -c sleep 30", "terminal term1 released", "terminal term2 released"}
	slices.Sort(terms[2:])
	if diff := cmp.Diff(wantTerms, terms); diff != "" {
		t.Errorf("terminal requests (-want +got):\n%s", diff)
	}
}
