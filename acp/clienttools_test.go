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
// read and gets rein's edits handed to it.
func TestFilesThroughTheEditor(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "read", `{"path":"a.txt"}`),
		llmtest.CallTool("c2", "write", `{"path":"a.txt","content":"new\n"}`),
		llmtest.Reply("Done."),
	)
	h := start(t, m, session.NewMemStore(), dir, acp.OptionAllowOnce)
	h.caps = sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}
	h.client.ServeFiles()
	h.client.SetBuffer(a, "unsaved\n")
	ctx := ctxT(t)
	id := h.newSession(ctx)
	if got := h.prompt(ctx, id, "rewrite a.txt"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q", got)
	}
	var fsLines []string
	for _, line := range h.client.Trace() {
		if strings.HasPrefix(line, "fs ") {
			fsLines = append(fsLines, line)
		}
	}
	if diff := cmp.Diff([]string{"fs read " + a, "fs write " + a}, fsLines); diff != "" {
		t.Errorf("file requests (-want +got):\n%s", diff)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	seen := toolResultText(reqs[1], "c1")
	if !strings.Contains(seen, "1\ton disk") || !strings.Contains(seen, "unsaved changes") || !strings.Contains(seen, "unsaved\n") {
		t.Errorf("the model's read of a.txt = %q; want the file and the editor's unsaved buffer", seen)
	}
	if buf, _ := h.client.Buffer(a); buf != "new\n" {
		t.Errorf("editor buffer after the write = %q, want the new content", buf)
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
