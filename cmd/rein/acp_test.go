package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/acp"
	"github.com/reinhq/rein/acp/acptest"
	"github.com/reinhq/rein/llm/llmtest"
)

// acpScenario is the model's side of the editor scenario both ACP tests
// play: a granted write, a rejected one, an answer; then a long command the
// editor cancels; then, after a load, one more answer.
func acpScenario() *llmtest.Model {
	return llmtest.NewModel(
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"new\n"}`),
		llmtest.CallTool("c2", "write", `{"path":"b.txt","content":"x"}`),
		llmtest.Reply("Wrote a.txt; b.txt was refused."),
		llmtest.CallTool("c3", "shell", `{"command":"sleep 30"}`),
		llmtest.Reply("Back again."),
	)
}

// acpWant is what the editor of the scenario sees: the first prompt's
// updates, the cancelled prompt's up to its failed call, and the replay of
// a load up to the same point.
func acpWant(work string) (first, cancelled, replay []string) {
	a, b := filepath.Join(work, "a.txt"), filepath.Join(work, "b.txt")
	first = []string{
		`tool_call c1 edit pending "Write a.txt" @` + a,
		`permission c1 allow-once`,
		`update c1 in_progress`,
		`update c1 completed diff ` + a + ` <new>→"new\n" "Created a.txt (1 line, 4 bytes)."`,
		`tool_call c2 edit pending "Write b.txt" @` + b,
		`permission c2 reject`,
		`update c2 failed "Blocked: rejected in the editor"`,
		`agent: Wrote a.txt; b.txt was refused.`,
	}
	cancelled = []string{"tool_call c3 execute pending \"Run `sleep 30`\"", "permission c3 allow-once", "update c3 in_progress"}
	replay = []string{
		"user: update the files",
		`tool_call c1 edit pending "Write a.txt" @` + a,
		"update c1 in_progress",
		`update c1 completed "Created a.txt (1 line, 4 bytes)."`,
		`tool_call c2 edit pending "Write b.txt" @` + b,
		`update c2 failed "Blocked: rejected in the editor"`,
		"agent: Wrote a.txt; b.txt was refused.",
		"user: wait a while",
		"tool_call c3 execute pending \"Run `sleep 30`\"",
		"update c3 in_progress",
	}
	return first, cancelled, replay
}

// checkTail compares got with want followed by one line for the call that
// was cancelled, whose text is the tool's.
func checkTail(t *testing.T, what string, got, want []string, call string) {
	t.Helper()
	if len(got) != len(want)+1 || !cmp.Equal(want, got[:len(want)]) || !strings.HasPrefix(got[len(want)], "update "+call+" failed") {
		t.Errorf("%s:\n%s\nwant:\n%s\nthen %s failed", what, strings.Join(got, "\n"), strings.Join(want, "\n"), call)
	}
}

// acpProc is a running 'rein acp' with the Go SDK's client on its pipes.
type acpProc struct {
	cmd    *exec.Cmd
	conn   *sdk.ClientSideConnection
	client *acptest.Client
	stdin  io.WriteCloser
	stdout *lineLog
	stderr *bytes.Buffer
}

// lineLog keeps what the agent wrote on stdout, to check it is protocol
// only.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// nonJSON returns the lines that are not JSON-RPC messages.
func (l *lineLog) nonJSON() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.JSONRPC != "2.0" {
			bad = append(bad, line)
		}
	}
	return bad
}

func (e *env) acpArgs(srv *llmtest.Server) []string {
	w := wires[0]
	return []string{"acp", "--model", w.model, "--base-url", w.url(srv.URL), "--store", e.store}
}

func startACP(t *testing.T, e *env, srv *llmtest.Server, answers ...string) *acpProc {
	t.Helper()
	cmd := e.cmd(context.Background(), wires[0].env(), e.acpArgs(srv)...)
	cmd.Stdin = nil
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &acpProc{cmd: cmd, client: acptest.NewClient(answers...), stdin: stdin, stdout: &lineLog{}, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.conn = sdk.NewClientSideConnection(p.client, stdin, io.TeeReader(stdout, p.stdout))
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return p
}

// stop closes the editor's side and waits for rein to exit cleanly.
func (p *acpProc) stop(t *testing.T) {
	t.Helper()
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("rein acp exited with %v; stderr:\n%s", err, p.stderr)
		}
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("rein acp did not exit after its stdin closed; stderr:\n%s", p.stderr)
	}
	if bad := p.stdout.nonJSON(); len(bad) > 0 {
		t.Errorf("stdout carried non-protocol lines: %q", bad)
	}
}

func TestACPEditorScenario(t *testing.T) {
	e := newEnv(t)
	m := acpScenario()
	srv := llmtest.NewServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want, wantCancelled, wantReplay := acpWant(e.work)
	p := startACP(t, e, srv, acp.OptionAllowOnce, acp.OptionReject, acp.OptionAllowOnce)

	init, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatalf("initialize: %v; stderr:\n%s", err, p.stderr)
	}
	if !init.AgentCapabilities.LoadSession {
		t.Error("rein does not advertise session/load")
	}
	ns, err := p.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.work, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	if got := p.prompt(ctx, t, ns.SessionId, "update the files"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q, want end_turn", got)
	}
	if diff := cmp.Diff(want, p.client.Trace()); diff != "" {
		t.Errorf("first prompt (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(e.work, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt was written though the editor rejected it (%v)", err)
	}

	// The editor switches the model; the next prompt goes to it.
	if opts := ns.ConfigOptions; len(opts) != 1 || opts[0].Select == nil || opts[0].Select.CurrentValue != "anthropic/claude-sonnet-4-5" {
		t.Errorf("session config options = %+v, want the model selector at the --model", opts)
	}
	if _, err := p.conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: ns.SessionId, ConfigId: "model", Value: "anthropic/claude-haiku-4-5"}}); err != nil {
		t.Fatalf("set the model: %v; stderr:\n%s", err, p.stderr)
	}

	// A long command, cancelled by the editor while it runs.
	p.cancelLongCommand(ctx, t, ns.SessionId)
	checkTail(t, "cancelled prompt", p.client.Trace(), wantCancelled, "c3")
	if reqs := m.Requests(); len(reqs) != 4 || reqs[2].Model != "claude-sonnet-4-5" || reqs[3].Model != "claude-haiku-4-5" {
		for _, r := range reqs {
			t.Logf("request for %s", r.Model)
		}
		t.Errorf("%d model requests; want 3 to claude-sonnet-4-5, then one to claude-haiku-4-5", len(reqs))
	}
	p.stop(t)

	loadAndContinue(ctx, t, e, srv, ns.SessionId, wantReplay)
}

// prompt sends text and returns the stop reason.
func (p *acpProc) prompt(ctx context.Context, t *testing.T, id sdk.SessionId, text string) sdk.StopReason {
	t.Helper()
	r, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatalf("session/prompt: %v; stderr:\n%s", err, p.stderr)
	}
	return r.StopReason
}

// cancelLongCommand prompts for the scenario's long command and cancels
// it once it runs.
func (p *acpProc) cancelLongCommand(ctx context.Context, t *testing.T, id sdk.SessionId) {
	t.Helper()
	p.client.Reset()
	stopped := make(chan sdk.StopReason, 1)
	go func() {
		r, err := p.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("wait a while")}})
		if err != nil {
			t.Errorf("session/prompt: %v", err)
		}
		stopped <- r.StopReason
	}()
	running := func(u sdk.SessionUpdate) bool {
		return u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "c3" &&
			u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == sdk.ToolCallStatusInProgress
	}
	if err := p.client.WaitFor(ctx, running); err != nil {
		t.Fatalf("%v; trace:\n%s", err, strings.Join(p.client.Trace(), "\n"))
	}
	if err := p.conn.Cancel(ctx, sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if got := <-stopped; got != sdk.StopReasonCancelled {
		t.Errorf("stop reason after cancel = %q, want cancelled", got)
	}
}

// loadAndContinue loads the session in a new 'rein acp', checks the
// replay, prompts once more, and checks that a load of an unknown session
// fails without creating it.
func loadAndContinue(ctx context.Context, t *testing.T, e *env, srv *llmtest.Server, id sdk.SessionId, wantReplay []string) {
	t.Helper()
	p := startACP(t, e, srv)
	if _, err := p.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: e.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v; stderr:\n%s", err, p.stderr)
	}
	checkTail(t, "replay", p.client.Trace(), wantReplay, "c3")
	p.client.Reset()
	if got := p.prompt(ctx, t, id, "still there?"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason after load = %q", got)
	}
	if diff := cmp.Diff([]string{"agent: Back again."}, p.client.Trace()); diff != "" {
		t.Errorf("prompt after load (-want +got):\n%s", diff)
	}
	_, err := p.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "no-such-session", Cwd: e.work, McpServers: []sdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "session no-such-session not found") {
		t.Errorf("load of an unknown session: %v; want an error naming it", err)
	}
	p.stop(t)
	r := e.run(nil, "sessions", "list", "--store", e.store)
	if r.code != 0 || !strings.Contains(r.stdout, string(id)) || strings.Contains(r.stdout, "no-such-session") {
		t.Errorf("sessions list (exit %d):\n%s\nwant the editor's session and not the one that failed to load", r.code, r.stdout)
	}
}

// The same scenario, played by the protocol's TypeScript client library.
func TestACPTypeScriptClient(t *testing.T) {
	e := newEnv(t)
	out := nodeEditor(t, e, llmtest.NewServer(t, acpScenario()), "session")
	var got struct {
		First, Cancelled, Replay, After []string
		Stops                           []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	first, cancelled, replay := acpWant(e.work)
	if diff := cmp.Diff(first, got.First); diff != "" {
		t.Errorf("first prompt (-want +got):\n%s", diff)
	}
	checkTail(t, "cancelled prompt", got.Cancelled, cancelled, "c3")
	checkTail(t, "replay", got.Replay, replay, "c3")
	if diff := cmp.Diff([]string{"agent: Back again."}, got.After); diff != "" {
		t.Errorf("prompt after load (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"end_turn", "cancelled", "end_turn"}, got.Stops); diff != "" {
		t.Errorf("stop reasons (-want +got):\n%s", diff)
	}
}

// nodeEditor plays scenario (session or editor) with the TypeScript client
// (acp/testdata/node/client.mjs) against 'rein acp' and returns what it
// printed; it skips without Node.js or the installed client, except in CI.
func nodeEditor(t *testing.T, e *env, srv *llmtest.Server, scenario string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; install Node.js 20+ to run the TypeScript client test")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "acp", "testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		msg := "the ACP TypeScript client is not installed; run: npm ci --prefix acp/testdata/node"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	argv, err := json.Marshal(append([]string{reinBin}, e.acpArgs(srv)...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"))
	cmd.Env = append(append(append([]string{}, e.vars...), wires[0].env()...), "REIN_ACP="+string(argv), "REIN_WORK="+e.work, "REIN_SCENARIO="+scenario)
	cmd.Dir = e.work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	return out
}

// Lines that are not JSON-RPC get a JSON-RPC error; the agent goes on.
func TestACPMalformedLines(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewServer(t, llmtest.NewModel())
	cmd := e.cmd(context.Background(), wires[0].env(), e.acpArgs(srv)...)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`this is not json`,
		`[1,2,3]`,
		`{"jsonrpc":"2.0","id":7}`,
		`{"jsonrpc":"2.0","id":8,"method":"no/such/method","params":{}}`,
		`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"missing","prompt":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}`,
	}, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rein acp: %v; stderr:\n%s", err, stderr.String())
	}
	type reply struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	byID := map[string]reply{}
	var nulls []reply
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("stdout line %q is not JSON", sc.Text())
		}
		if string(r.ID) == "null" {
			nulls = append(nulls, r)
			continue
		}
		byID[string(r.ID)] = r
	}
	if len(nulls) != 2 || nulls[0].Error.Code != -32700 || nulls[1].Error.Code != -32600 {
		t.Errorf("replies without id = %+v, want a parse error and an invalid request", nulls)
	}
	checks := map[string]int{"7": -32600, "8": -32601, "9": -32602}
	for id, code := range checks {
		r, ok := byID[id]
		if !ok || r.Error == nil || r.Error.Code != code {
			t.Errorf("reply %s = %+v, want error %d", id, r, code)
		}
	}
	if r := byID["9"]; r.Error == nil || !strings.Contains(r.Error.Message, "session/new") {
		t.Errorf("unknown session error = %+v, want it to say how to open one", r.Error)
	}
	if r := byID["10"]; r.Error != nil || len(r.Result) == 0 {
		t.Errorf("initialize after the bad lines = %+v, want a result", r)
	}
}

func TestACPRejectsEditorChosenFlags(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewServer(t, llmtest.NewModel())
	r := e.run(wires[0].env(), append(e.acpArgs(srv), "--session", "x")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--session is chosen by the editor") {
		t.Errorf("exit %d, stderr %q; want a usage error naming --session", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing but protocol", r.stdout)
	}
}
