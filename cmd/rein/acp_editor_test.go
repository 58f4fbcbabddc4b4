package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/acp"
	"github.com/reinhq/rein/llm/llmtest"
)

// acpEditorModel is the model's side of the editor-capabilities scenario:
// a read that sees the editor's buffer, an edit made through the editor,
// a background command in an editor terminal and a wait for it.
func acpEditorModel() *llmtest.Model {
	return llmtest.NewModel(
		llmtest.CallTool("c1", "read", `{"path":"a.txt"}`),
		llmtest.CallTool("c2", "edit", `{"path":"a.txt","old_string":"old","new_string":"new"}`),
		llmtest.CallTool("c3", "shell", `{"command":"echo from the background","run_in_background":true}`),
		llmtest.CallTool("c4", "task_wait", `{"id":"e1","timeout":20}`),
		llmtest.Reply("Edited, and the task is done."),
	)
}

// An editor that offers its file system and terminals gets rein's edits
// through fs/write_text_file and runs the shell's background commands in
// its terminals, which rein releases when the editor closes the session.
func TestACPEditorFilesAndTerminals(t *testing.T) {
	e := newEnv(t)
	a := filepath.Join(e.work, "a.txt")
	if err := os.WriteFile(a, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := acpEditorModel()
	srv := llmtest.NewServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := startACP(t, e, srv, acp.OptionAllowOnce, acp.OptionAllowOnce)
	p.client.ServeFiles()
	p.client.RunTerminals()
	p.client.SetBuffer(a, "old\nunsaved\n")
	caps := sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true}
	if _, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatalf("initialize: %v; stderr:\n%s", err, p.stderr)
	}
	ns, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.work, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	if got := p.prompt(ctx, t, ns.SessionId, "edit a.txt and run it"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q, want end_turn", got)
	}
	if _, err := p.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: ns.SessionId}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	p.stop(t)

	var requests []string
	for _, line := range p.client.Trace() {
		if strings.HasPrefix(line, "fs ") || strings.HasPrefix(line, "terminal ") {
			line, _, _ = strings.Cut(line, " [") // the terminal's variables
			requests = append(requests, line)
		}
	}
	buf, _ := p.client.Buffer(a)
	checkEditorScenario(t, e, m, requests, buf)
}

// The same scenario, played by the protocol's TypeScript client library.
func TestACPTypeScriptEditorFilesAndTerminals(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.work, "a.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := acpEditorModel()
	out := nodeEditor(t, e, llmtest.NewServer(t, m), "editor")
	var got struct {
		Requests, Stops []string
		Buffer          string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if diff := cmp.Diff([]string{"end_turn"}, got.Stops); diff != "" {
		t.Errorf("stop reasons (-want +got):\n%s", diff)
	}
	checkEditorScenario(t, e, m, got.Requests, got.Buffer)
}

// checkEditorScenario checks what the editor of the scenario was asked
// for, the file and the buffer it ends with, and what the model was told.
func checkEditorScenario(t *testing.T, e *env, m *llmtest.Model, requests []string, buf string) {
	t.Helper()
	a := filepath.Join(e.work, "a.txt")
	want := []string{"fs read " + a, "fs write " + a, "terminal bash -c echo from the background", "terminal term1 released"}
	if diff := cmp.Diff(want, requests); diff != "" {
		t.Errorf("editor requests (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(a); string(b) != "new\n" {
		t.Errorf("a.txt = %q, want the edit the editor wrote", b)
	}
	if buf != "new\n" {
		t.Errorf("the editor's buffer = %q, want the edit", buf)
	}
	reqs := m.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	if got := toolResultText(reqs[4], "c4"); got != "Background task e1 (echo from the background) exited with code 0.\nNew output:\nfrom the background" {
		t.Errorf("task_wait = %q; want the editor terminal's exit and output", got)
	}
}
