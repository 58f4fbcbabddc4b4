package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

type echoIn struct {
	Message string `json:"message"`
}

// newServer returns an in-process MCP server with a few tools.
func newServer(t testing.TB, instructions string) *sdk.Server {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ServerOptions{Instructions: instructions})
	no := false
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}},
		func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("it broke")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write.file", Description: "Writes.", Annotations: &sdk.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no}},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "written"}}}, nil, nil
		})
	return s
}

// inProcess connects each attempt to srv over a fresh in-memory pipe and
// counts the attempts.
func inProcess(t testing.TB, srv *sdk.Server, count *atomic.Int32) func(context.Context) (sdk.Transport, error) {
	return func(ctx context.Context) (sdk.Transport, error) {
		if count != nil {
			count.Add(1)
		}
		ct, end, err := connectInMemory(srv)
		if err != nil {
			return nil, err
		}
		t.Cleanup(end.close)
		return ct, nil
	}
}

// recorder collects events.
type recorder struct {
	mu  sync.Mutex
	evs []mcp.Event
}

func (r *recorder) add(ev mcp.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		out = append(out, ev.Kind()+" "+ev.ServerName())
	}
	return out
}

func newManager(t *testing.T, opts *mcp.Options) *mcp.Manager {
	t.Helper()
	m, err := mcp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func names(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	return out
}

func TestNamespacingAndAnnotations(t *testing.T) {
	a := newServer(t, "")
	// Server "srv" tool "x_echo" and server "srv_x" tool "echo" meet at
	// mcp_srv_x_echo.
	b := sdk.NewServer(&sdk.Implementation{Name: "b", Version: "1"}, nil)
	sdk.AddTool(b, &sdk.Tool{Name: "x_echo"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "b"}}}, nil, nil
	})
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{
		{Name: "srv", NewTransport: inProcess(t, b, nil)},
		{Name: "srv.x", NewTransport: inProcess(t, a, nil)},
	}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := names(ts)
	// The more specific server (srv.x) keeps the plain name whichever
	// connects first; srv's x_echo gets a hash suffix.
	if len(got) != 4 || !strings.HasPrefix(got[0], "mcp_srv_x_echo_") || got[1] != "mcp_srv_x_echo" || got[2] != "mcp_srv_x_fail" || got[3] != "mcp_srv_x_write_file" {
		t.Fatalf("tool names = %q; want srv's x_echo renamed with a hash suffix", got)
	}
	for _, tt := range ts {
		if !tool.ValidName(tt.Spec().Name) {
			t.Errorf("%q is not a valid tool name", tt.Spec().Name)
		}
	}
	echo, _ := m.Lookup(got[1])
	if echo.RemoteName() != "echo" || echo.Server() != "srv.x" || echo.Origin() != "mcp" {
		t.Errorf("renamed tool = %s/%s origin %s, want srv.x/echo origin mcp", echo.Server(), echo.RemoteName(), echo.Origin())
	}
	if o := tool.OriginOf(tool.DryRun(echo)); o != tool.OriginMCP {
		t.Errorf("OriginOf(DryRun(echo)) = %q, want %q", o, tool.OriginMCP)
	}
	if diff := cmp.Diff(&tool.Annotations{ReadOnly: true}, echo.Spec().Annotations); diff != "" {
		t.Errorf("echo annotations (-want +got):\n%s", diff)
	}
	fail, _ := m.Lookup("mcp_srv_x_fail")
	if fail.Spec().Annotations != nil {
		t.Errorf("fail has annotations %+v; an unannotated MCP tool must stay unannotated", fail.Spec().Annotations)
	}
	res, err := tool.Run(context.Background(), echo, &tool.Call{ID: "c1", Name: got[1], Args: json.RawMessage(`{"message":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.TextOf() != "Echo: hi" || res.IsError {
		t.Errorf("echo result = %q (error %v), want %q", res.TextOf(), res.IsError, "Echo: hi")
	}
}

func TestFilters(t *testing.T) {
	srv := newServer(t, "")
	tests := []struct {
		name     string
		cfg      mcp.ServerConfig
		want     []string
		warnings []string
	}{
		{"all", mcp.ServerConfig{}, []string{"mcp_s_echo", "mcp_s_fail", "mcp_s_write_file"}, nil},
		{"enabled", mcp.ServerConfig{Enabled: []string{"echo", "nope"}}, []string{"mcp_s_echo"}, []string{`enabled tool "nope" is not offered by the server`}},
		{"disabled", mcp.ServerConfig{Disabled: []string{"fail"}}, []string{"mcp_s_echo", "mcp_s_write_file"}, nil},
		{"filter read-only", mcp.ServerConfig{Filter: func(t mcp.ToolInfo) bool { return t.Annotations != nil && t.Annotations.ReadOnly }}, []string{"mcp_s_echo"}, nil},
		{"enabled then disabled", mcp.ServerConfig{Enabled: []string{"echo", "fail"}, Disabled: []string{"echo"}}, []string{"mcp_s_fail"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			cfg := tt.cfg
			cfg.Name, cfg.NewTransport = "s", inProcess(t, srv, nil)
			m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{cfg}, Events: rec.add})
			ts, err := m.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(ts)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			var end *mcp.BootstrapEnd
			for _, ev := range rec.evs {
				if e, ok := ev.(*mcp.BootstrapEnd); ok {
					end = e
				}
			}
			if end == nil || !end.OK || end.ToolCount != len(tt.want) {
				t.Fatalf("bootstrap end = %+v, want ok with %d tools", end, len(tt.want))
			}
			if diff := cmp.Diff(tt.warnings, end.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			// A filtered-out tool cannot be called from host code either.
			if _, err := m.Call(context.Background(), "s", "nope", nil); !errors.Is(err, mcp.ErrUnknownTool) {
				t.Errorf("Call of an unknown tool: err = %v, want ErrUnknownTool", err)
			}
		})
	}
}

func TestLazyConnect(t *testing.T) {
	srv := newServer(t, "")
	var dials atomic.Int32
	var rec recorder
	cached := []mcp.ToolInfo{{Name: "echo", Description: "Echoes (cached).", Schema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`), Annotations: &tool.Annotations{ReadOnly: true}}}
	m := newManager(t, &mcp.Options{Events: rec.add, Servers: []mcp.ServerConfig{
		{Name: "lazy", NewTransport: inProcess(t, srv, &dials), Lazy: true, CachedTools: cached},
	}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp_lazy_echo"}, names(ts)); diff != "" {
		t.Fatalf("tools before connecting (-want +got):\n%s", diff)
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("a lazy server with cached tools connected %d times at bootstrap, want 0", n)
	}
	if st := m.Servers()[0].State; st != mcp.StateLazy {
		t.Errorf("state = %q, want %q", st, mcp.StateLazy)
	}
	res, err := tool.Run(context.Background(), ts[0], &tool.Call{ID: "c1", Args: json.RawMessage(`{"message":"late"}`)})
	if err != nil || res.TextOf() != "Echo: late" {
		t.Fatalf("first call = %q, %v; want the server's answer", res.TextOf(), err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("connections after the first call = %d, want 1", n)
	}
	var conn *mcp.Connected
	for _, ev := range rec.evs {
		if c, ok := ev.(*mcp.Connected); ok {
			conn = c
		}
	}
	if conn == nil || !conn.Lazy {
		t.Errorf("connect event = %+v, want one marked lazy", conn)
	}
	// The real list replaced the cache.
	if got := names(m.Set().Tools()); len(got) != 3 {
		t.Errorf("tools after connecting = %q, want the server's 3", got)
	}
}

func TestHostOnly(t *testing.T) {
	srv := newServer(t, "Only for the host.")
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{
		{Name: "visible", NewTransport: inProcess(t, newServer(t, "Use echo to repeat."), nil)},
		{Name: "hidden", NewTransport: inProcess(t, srv, nil), HostOnly: true},
	}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names(ts) {
		if strings.HasPrefix(n, "mcp_hidden_") {
			t.Errorf("host-only tool %q offered to the model", n)
		}
	}
	if len(ts) != 3 {
		t.Errorf("tools = %q, want the visible server's 3", names(ts))
	}
	res, err := m.Call(context.Background(), "hidden", "echo", json.RawMessage(`{"message":"host"}`))
	if err != nil || res.TextOf() != "Echo: host" {
		t.Fatalf("host call = %v, %v", res, err)
	}
	if got := m.Instructions(); !strings.Contains(got, "Use echo to repeat.") || strings.Contains(got, "Only for the host.") {
		t.Errorf("instructions = %q; want the visible server's only", got)
	}
	st := m.Servers()
	if !st[1].HostOnly || st[1].State != mcp.StateConnected {
		t.Errorf("hidden status = %+v", st[1])
	}
}

func TestBootstrapFailureKeepsOthers(t *testing.T) {
	var rec recorder
	m := newManager(t, &mcp.Options{Events: rec.add, Servers: []mcp.ServerConfig{
		{Name: "good", NewTransport: inProcess(t, newServer(t, ""), nil)},
		{Name: "bad", Command: "/nonexistent/mcp-server"},
	}})
	ts, err := m.Tools(context.Background())
	var be *mcp.BootstrapError
	if !errors.As(err, &be) || be.Failed["bad"] == nil || len(be.Failed) != 1 {
		t.Fatalf("err = %v, want a BootstrapError naming bad", err)
	}
	if len(ts) != 3 {
		t.Errorf("tools = %q, want good's 3", names(ts))
	}
	var ends []string
	for _, ev := range rec.evs {
		if e, ok := ev.(*mcp.BootstrapEnd); ok {
			ends = append(ends, e.Server+map[bool]string{true: " ok", false: " failed"}[e.OK])
		}
	}
	if len(ends) != 2 {
		t.Errorf("bootstrap ends = %q, want one per server", ends)
	}
	if st := m.Servers()[1]; st.State != mcp.StateDown || st.Err == "" {
		t.Errorf("bad status = %+v, want down with the error", st)
	}
}

func TestEventsAndClose(t *testing.T) {
	var rec recorder
	m, err := mcp.New(&mcp.Options{Events: rec.add, Servers: []mcp.ServerConfig{{Name: "s", NewTransport: inProcess(t, newServer(t, ""), nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Warmup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(context.Background(), "s", "echo", json.RawMessage(`{"message":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(context.Background(), "s", "fail", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	want := []string{"mcp:connect s", "mcp:bootstrap:end s", "mcp:tool:before s", "mcp:tool:after s", "mcp:tool:before s", "mcp:tool:after s", "mcp:close s"}
	if diff := cmp.Diff(want, rec.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	after := rec.evs[5].(*mcp.ToolAfter)
	if !after.IsError || after.Tool != "fail" || after.Name != "mcp_s_fail" {
		t.Errorf("fail's after event = %+v, want an error result", after)
	}
	if _, err := m.Call(context.Background(), "s", "echo", nil); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}
}

// toolResults returns the tool.result events of a run.
func toolResults(res *agent.Result) []*session.ToolResult {
	var out []*session.ToolResult
	for _, ev := range res.Events {
		if r, ok := ev.Data.(*session.ToolResult); ok {
			out = append(out, r)
		}
	}
	return out
}

func TestThroughTheLoop(t *testing.T) {
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "s", NewTransport: inProcess(t, newServer(t, ""), nil)}}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewModel(
		llmtest.CallTools(
			llm.ToolCall{ID: "c1", Name: "mcp_s_echo", Args: json.RawMessage(`{"message":"loop"}`)},
			llm.ToolCall{ID: "c2", Name: "mcp_s_fail", Args: json.RawMessage(`{}`)},
			llm.ToolCall{ID: "c3", Name: "mcp_s_echo", Args: json.RawMessage(`{"message":7}`)},
		),
		llmtest.Reply("done"),
	)
	a, err := agent.New(&agent.Options{Model: model, Tools: ts, Closers: m.Closers()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[llm.CallID]string{}
	errs := map[llm.CallID]bool{}
	for _, r := range toolResults(res) {
		for _, p := range r.Parts {
			if tx, ok := p.(*llm.Text); ok {
				got[r.CallID] += tx.Text
			}
		}
		errs[r.CallID] = r.IsError
	}
	// c3's 7 was coerced to "7" by rein's validation before reaching the server.
	want := map[llm.CallID]string{"c1": "Echo: loop", "c2": "it broke", "c3": "Echo: 7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if !errs["c2"] || errs["c1"] {
		t.Errorf("error flags = %v, want only c2", errs)
	}
	if res.Text != "done" {
		t.Errorf("final text = %q", res.Text)
	}
}

func TestDryRunInMemory(t *testing.T) {
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "s", NewTransport: inProcess(t, newServer(t, ""), nil)}}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(ts...)
	dry := tool.DryRunSet(set)
	run := func(name, args string) *tool.Result {
		tl, _ := dry.Lookup(name)
		r, err := tool.Run(context.Background(), tl, &tool.Call{ID: "c", Name: name, Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run("mcp_s_echo", `{"message":"r"}`); r.TextOf() != "Echo: r" {
		t.Errorf("read-only tool in dry run = %q, want it to run", r.TextOf())
	}
	if r := run("mcp_s_write_file", `{}`); r.Meta[tool.MetaDryRun] != true || strings.Contains(r.TextOf(), "written") {
		t.Errorf("write tool in dry run = %q, want it stubbed", r.TextOf())
	}
	if r := run("mcp_s_fail", `{}`); !r.IsError || !strings.Contains(r.TextOf(), "unavailable") {
		t.Errorf("unannotated tool in dry run = %q, want unavailable", r.TextOf())
	}
}

// authServer serves an in-process go-sdk server over streamable HTTP and
// records the Authorization header of every tool call.
func authServer(t *testing.T) (url string, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	s := sdk.NewServer(&sdk.Implementation{Name: "auth", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "whoami"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		h := req.Extra.Header.Get("Authorization")
		mu.Lock()
		got = append(got, h)
		mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func TestAuthPerTurn(t *testing.T) {
	url, seen := authServer(t)
	var turns atomic.Int32
	var sessions sync.Map
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{
		Name: "api", URL: url,
		Auth: func(ctx context.Context, req *mcp.AuthRequest) (http.Header, error) {
			if req.Session == "" {
				return http.Header{"Authorization": {"Bearer connection"}}, nil
			}
			sessions.Store(req.Session, true)
			n := turns.Add(1)
			return http.Header{"Authorization": {"Bearer turn-" + string(rune('0'+n))}}, nil
		},
	}}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewModel(
		llmtest.CallTool("c1", "mcp_api_whoami", `{}`), llmtest.Reply("one"),
		llmtest.CallTool("c2", "mcp_api_whoami", `{}`), llmtest.Reply("two"),
	)
	a, err := agent.New(&agent.Options{Model: model, Tools: ts, Hooks: m.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, p := range []string{"first", "second"} {
		if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: p}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"Bearer turn-1", "Bearer turn-2"}, seen()); diff != "" {
		t.Errorf("Authorization of the tool calls (-want +got):\n%s", diff)
	}
	if _, ok := sessions.Load(string(a.Session())); !ok {
		t.Errorf("the auth callback never saw session %s", a.Session())
	}
}

func TestAuthFailureFailsTurn(t *testing.T) {
	url, seen := authServer(t)
	var fail atomic.Bool
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{
		Name: "api", URL: url,
		Auth: func(ctx context.Context, req *mcp.AuthRequest) (http.Header, error) {
			if req.Session != "" && fail.Load() {
				return nil, errors.New("token expired; sign in again")
			}
			return http.Header{"Authorization": {"Bearer ok"}}, nil
		},
	}}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewModel(llmtest.CallTool("c1", "mcp_api_whoami", `{}`), llmtest.Reply("one"))
	a, err := agent.New(&agent.Options{Model: model, Tools: ts, Hooks: m.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fail.Store(true)
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	var he *hook.Error
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "token expired") {
		t.Fatalf("Run error = %v, want the auth failure as a hook error", err)
	}
	if model.Calls() != 0 {
		t.Errorf("the model was asked %d times; a failed auth must fail the turn before any request", model.Calls())
	}
	if res != nil {
		for _, ev := range res.Events {
			if _, ok := ev.Data.(*session.UserMessage); ok {
				t.Errorf("the prompt reached the log as a user message despite the auth failure")
			}
		}
	}
	if len(seen()) != 0 {
		t.Errorf("tool calls reached the server: %q", seen())
	}
	// Fixed credentials let the next turn run.
	fail.Store(false)
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "again"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Bearer ok"}, seen()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_ = time.Second
}
