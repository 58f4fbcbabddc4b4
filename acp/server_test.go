package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/acp"
	"github.com/reinhq/rein/acp/acptest"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
	"github.com/reinhq/rein/tool/todo"
)

// harness is a Server on pipes with a scripted editor on the other end.
type harness struct {
	t      *testing.T
	conn   *sdk.ClientSideConnection
	client *acptest.Client
	dir    string
	caps   sdk.ClientCapabilities // what the editor offers in initialize
	done   chan error
	stop   func()
}

// blockTool waits until its call is cancelled: a tool to cancel mid-run.
var blockTool = tool.Func{
	ToolSpec: tool.Spec{Name: "block", Description: "waits", Schema: json.RawMessage(`{"type":"object"}`),
		Annotations: &tool.Annotations{ReadOnly: true}},
	Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	},
}

// start serves a Server whose agents play m over st, in dir.
func start(t *testing.T, m llm.Model, st session.Store, dir string, answers ...string) *harness {
	t.Helper()
	srv, err := acp.New(&acp.Options{
		Name: "rein", Version: "test",
		NewAgent: func(ctx context.Context, req *acp.AgentRequest) (*acp.Handle, error) {
			policy := &sandbox.Policy{Root: req.Cwd}
			sh := shell.New(&shell.Options{Policy: policy})
			tools := append(fs.NewTools(policy, nil), todo.New(nil), blockTool)
			tools = req.ClientTools(append(tools, sh.Tools()...), policy)
			a, err := agent.New(&agent.Options{
				Model: m, Provider: "llmtest", ModelName: "test",
				Tools: tools, Store: st, Session: req.Session, Closers: []io.Closer{sh},
				Approver: tool.NewPolicy(&tool.PolicyOptions{Default: tool.Ask, AllowReadOnly: true,
					Rules: []tool.Rule{{Tool: todo.Name, Verdict: tool.Allow}}, Approver: req.Approver}),
				SpillDir: t.TempDir(),
			})
			if err != nil {
				return nil, err
			}
			return &acp.Handle{Agent: a}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, srv, dir, answers...)
}

// serve connects a scripted editor to srv.
func serve(t *testing.T, srv *acp.Server, dir string, answers ...string) *harness {
	t.Helper()
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	h := &harness{t: t, client: acptest.NewClient(answers...), dir: dir, done: make(chan error, 1)}
	go func() { h.done <- srv.Serve(context.Background(), toAgent, fromAgent) }()
	h.conn = sdk.NewClientSideConnection(h.client, fromClient, toClient)
	h.conn.SetLogger(slog.New(slog.DiscardHandler))
	h.stop = sync.OnceFunc(func() {
		fromClient.Close()
		if err := <-h.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		fromAgent.Close()
	})
	t.Cleanup(h.stop)
	return h
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) newSession(ctx context.Context) sdk.SessionId {
	h.t.Helper()
	if _, err := h.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: h.caps}); err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	ns, err := h.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return ns.SessionId
}

func (h *harness) prompt(ctx context.Context, id sdk.SessionId, text string) sdk.StopReason {
	h.t.Helper()
	resp, err := h.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		h.t.Fatalf("session/prompt: %v", err)
	}
	return resp.StopReason
}

// cancelWhen prompts "wait", cancels the prompt once an update satisfies
// ready, and checks it stopped as cancelled.
func (h *harness) cancelWhen(ctx context.Context, id sdk.SessionId, ready func(sdk.SessionUpdate) bool) {
	h.t.Helper()
	stopped := make(chan sdk.StopReason, 1)
	go func() { stopped <- h.prompt(ctx, id, "wait") }()
	if err := h.client.WaitFor(ctx, ready); err != nil {
		h.t.Fatal(err)
	}
	if err := h.conn.Cancel(ctx, sdk.CancelNotification{SessionId: id}); err != nil {
		h.t.Fatal(err)
	}
	if got := <-stopped; got != sdk.StopReasonCancelled {
		h.t.Errorf("stop reason = %q, want cancelled", got)
	}
}

func TestInitializeAdvertises(t *testing.T) {
	h := start(t, llmtest.NewModel(), session.NewMemStore(), t.TempDir())
	resp, err := h.conn.Initialize(ctxT(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	c := resp.AgentCapabilities
	if !c.LoadSession || !c.PromptCapabilities.Image || !c.PromptCapabilities.EmbeddedContext || !c.McpCapabilities.Http || !c.McpCapabilities.Sse {
		t.Errorf("capabilities = %+v; want load, image, embedded context, http and sse MCP", c)
	}
	if resp.AgentInfo == nil || resp.AgentInfo.Name != "rein" {
		t.Errorf("agentInfo = %+v, want rein", resp.AgentInfo)
	}
}

// A prompt whose model writes a file (allowed), writes another (rejected),
// keeps a plan and answers: the editor sees every step in order.
func TestPromptStreamsToolCallsPermissionsAndPlan(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(
		llmtest.CallTool("c0", "read", `{"path":"a.txt"}`),
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"new\n"}`),
		llmtest.CallTool("c2", "write", `{"path":"b.txt","content":"x"}`),
		llmtest.CallTool("c3", "todo", `{"items":[{"id":"1","content":"Write a.txt","status":"completed"},{"id":"2","content":"Write b.txt","status":"pending"}]}`),
		llmtest.Reply("Done: a.txt written, b.txt refused."),
	)
	h := start(t, m, session.NewMemStore(), dir, acp.OptionAllowOnce, acp.OptionReject)
	ctx := ctxT(t)
	id := h.newSession(ctx)
	if got := h.prompt(ctx, id, "update the files"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q, want end_turn", got)
	}
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	want := []string{
		`tool_call c0 read pending "Read a.txt" @` + a,
		`update c0 in_progress`,
		`update c0 completed "     1\told\n"`,
		`tool_call c1 edit pending "Write a.txt" @` + a,
		`permission c1 allow-once`,
		`update c1 in_progress`,
		`update c1 completed diff ` + a + ` "old\n"→"new\n" "Wrote a.txt (1 line, 4 bytes)."`,
		`tool_call c2 edit pending "Write b.txt" @` + b,
		`permission c2 reject`,
		`update c2 failed "Blocked: rejected in the editor"`,
		`tool_call c3 think pending "Update the plan"`,
		`update c3 in_progress`,
		`update c3 completed "Todo list updated (2 items: 1 completed, 0 in progress, 1 pending):\n[x] 1. Write a.txt\n[ ] 2. Write b.txt"`,
		`plan [completed] Write a.txt, [pending] Write b.txt`,
		`agent: Done: a.txt written, b.txt refused.`,
	}
	got := h.client.Trace()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace (-want +got):\n%s\nfull trace:\n%s", diff, strings.Join(got, "\n"))
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("b.txt exists after the editor rejected the write (err %v)", err)
	}
}

func TestCancelMidTool(t *testing.T) {
	m := llmtest.NewModel(llmtest.CallTool("c1", "block", `{}`), llmtest.Reply("never sent"))
	h := start(t, m, session.NewMemStore(), t.TempDir())
	ctx := ctxT(t)
	id := h.newSession(ctx)
	running := func(u sdk.SessionUpdate) bool {
		return u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == sdk.ToolCallStatusInProgress
	}
	h.cancelWhen(ctx, id, running)
	tr := h.client.Trace()
	if last := tr[len(tr)-1]; !strings.HasPrefix(last, "update c1 failed") {
		t.Errorf("last update = %q, want the cancelled call failed; trace:\n%s", last, strings.Join(tr, "\n"))
	}
	if m.Calls() != 1 {
		t.Errorf("model called %d times, want 1: no request after a cancel", m.Calls())
	}
}

func TestLoadReplaysHistory(t *testing.T) {
	dir := t.TempDir()
	st := session.NewMemStore()
	m := llmtest.NewModel(llmtest.CallTool("c1", "ls", `{"path":"."}`), llmtest.Reply("It is empty."))
	h := start(t, m, st, dir)
	ctx := ctxT(t)
	id := h.newSession(ctx)
	h.prompt(ctx, id, "what is here?")
	h.stop()

	h2 := start(t, llmtest.NewModel(llmtest.Reply("Still empty.")), st, dir)
	if _, err := h2.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	want := []string{
		"user: what is here?",
		`tool_call c1 read pending "List ." @` + dir,
		"update c1 in_progress",
		"update c1 completed",
		"agent: It is empty.",
	}
	got := h2.client.Trace()
	for i := range got {
		// The listing's text is the tool's; the replay's shape is ours.
		if strings.HasPrefix(got[i], "update c1 completed") {
			got[i] = "update c1 completed"
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	h2.client.Reset()
	if got := h2.prompt(ctx, id, "and now?"); got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason after load = %q", got)
	}
	if diff := cmp.Diff([]string{"agent: Still empty."}, h2.client.Trace()); diff != "" {
		t.Errorf("prompt after load (-want +got):\n%s", diff)
	}
}

func TestRequestErrorsSayWhatToDo(t *testing.T) {
	h := start(t, llmtest.NewModel(), session.NewMemStore(), t.TempDir())
	ctx := ctxT(t)
	h.newSession(ctx)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"relative cwd", func() error {
			_, err := h.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: "rel/dir", McpServers: []sdk.McpServer{}})
			return err
		}, "must be an absolute path"},
		{"unknown session", func() error {
			_, err := h.conn.Prompt(ctx, sdk.PromptRequest{SessionId: "nope", Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
			return err
		}, "create one with session/new"},
		{"audio prompt", func() error {
			id := h.newSession(ctx)
			_, err := h.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.AudioBlock("AAAA", "audio/wav")}})
			return err
		}, "rein takes no audio"},
		{"mcp server without a name", func() error {
			_, err := h.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{{Stdio: &sdk.McpServerStdio{Command: "x", Args: []string{}, Env: []sdk.EnvVariable{}}}}})
			return err
		}, "needs a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// "Always allow" holds for the rest of the session: the tool is not asked
// about again.
func TestAllowAlwaysIsRemembered(t *testing.T) {
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"a"}`),
		llmtest.CallTool("c2", "write", `{"path":"b.txt","content":"b"}`),
		llmtest.Reply("Both written."),
	)
	h := start(t, m, session.NewMemStore(), t.TempDir(), acp.OptionAllowAlways)
	ctx := ctxT(t)
	id := h.newSession(ctx)
	h.prompt(ctx, id, "write both")
	var asked []string
	for _, line := range h.client.Trace() {
		if strings.HasPrefix(line, "permission ") {
			asked = append(asked, line)
		}
	}
	if diff := cmp.Diff([]string{"permission c1 allow-always"}, asked); diff != "" {
		t.Errorf("permission requests (-want +got):\n%s", diff)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(h.dir, f)); err != nil {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
}

// The editor switches a session's model between prompts; the session and
// its history stay.
func TestSetModel(t *testing.T) {
	models := map[string]*llmtest.Model{
		"llmtest/a": llmtest.NewModel(llmtest.Reply("from a")),
		"llmtest/b": llmtest.NewModel(llmtest.Reply("from b")),
	}
	st := session.NewMemStore()
	srv, err := acp.New(&acp.Options{
		Models: []string{"llmtest/a", "llmtest/b"},
		NewAgent: func(ctx context.Context, req *acp.AgentRequest) (*acp.Handle, error) {
			name := req.Model
			if name == "" {
				name = "llmtest/a"
			}
			a, err := agent.New(&agent.Options{Model: models[name], Provider: "llmtest", ModelName: name, Store: st, Session: req.Session})
			if err != nil {
				return nil, err
			}
			return &acp.Handle{Agent: a, Model: name}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := serve(t, srv, t.TempDir())
	ctx := ctxT(t)
	if _, err := h.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := h.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	current := func(opts []sdk.SessionConfigOption) string {
		if len(opts) != 1 || opts[0].Select == nil || opts[0].Select.Id != "model" {
			t.Fatalf("config options = %+v, want one model selector", opts)
		}
		return string(opts[0].Select.CurrentValue)
	}
	if got := current(ns.ConfigOptions); got != "llmtest/a" {
		t.Errorf("model at start = %q", got)
	}
	h.prompt(ctx, ns.SessionId, "one")
	if diff := cmp.Diff([]string{"agent: from a"}, h.client.Trace()); diff != "" {
		t.Errorf("first answer (-want +got):\n%s", diff)
	}
	h.client.Reset()
	set, err := h.conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: ns.SessionId, ConfigId: "model", Value: "llmtest/b"}})
	if err != nil {
		t.Fatalf("set model: %v", err)
	}
	if got := current(set.ConfigOptions); got != "llmtest/b" {
		t.Errorf("model after the switch = %q", got)
	}
	h.prompt(ctx, ns.SessionId, "two")
	if diff := cmp.Diff([]string{"agent: from b"}, h.client.Trace()); diff != "" {
		t.Errorf("answer after the switch (-want +got):\n%s", diff)
	}
	if reqs := models["llmtest/b"].Requests(); len(reqs) != 1 || len(reqs[0].Messages) != 3 {
		t.Errorf("model b saw %d requests; want one holding the first exchange and the new prompt", len(reqs))
	}
	_, err = h.conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: ns.SessionId, ConfigId: "model", Value: "other/x"}})
	if err == nil || !strings.Contains(err.Error(), "choose one of llmtest/a, llmtest/b") {
		t.Errorf("unknown model: %v, want an error listing the choices", err)
	}
}
