package mcp_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/tool"
)

func TestEagerBootstrap(t *testing.T) {
	var dials atomic.Int32
	connected := make(chan struct{}, 1)
	m := newManager(t, &mcp.Options{Eager: true, Servers: []mcp.ServerConfig{{Name: "s", NewTransport: inProcess(t, newServer(t, ""), &dials)}},
		Events: func(ev mcp.Event) {
			if _, ok := ev.(*mcp.BootstrapEnd); ok {
				connected <- struct{}{}
			}
		}})
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		t.Fatal("an eager Manager did not bootstrap in the background")
	}
	if _, err := m.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("connections = %d, want 1 (Tools reuses the eager bootstrap)", n)
	}
}

func TestCallTimeout(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "sleep"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "slow", NewTransport: inProcess(t, s, nil), CallTimeout: 50 * time.Millisecond}}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := tool.Run(context.Background(), ts[0], &tool.Call{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.TextOf(), "deadline exceeded") {
		t.Errorf("result = %q, want a timeout error result", res.TextOf())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %s despite a 50ms timeout", d)
	}
	// The connection survives a timed-out call.
	if st := m.Servers()[0]; st.State != mcp.StateConnected {
		t.Errorf("state after a timeout = %s", st.State)
	}
}

func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := newServer(t, "")
	m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{{Name: "s", NewTransport: inProcess(t, srv, nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Warmup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(context.Background(), "s", "echo", []byte(`{"message":"x"}`)); err != nil {
		t.Fatal(err)
	}
	m.Close()
	// The in-process server's side of the pipe winds down on its own;
	// give it a moment, then no goroutine of ours may remain.
	testwait.For(5*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		if strings.Contains(string(buf), "reinhq/rein/mcp.") {
			t.Errorf("%d goroutines after Close, %d before; rein's still running:\n%s", n, before, buf)
		}
	}
}

func TestSecretsStayOutOfErrorsAndEvents(t *testing.T) {
	const secret = "sk-very-secret-value"
	lookup := func(k string) (string, bool) {
		if k == "TOKEN" {
			return secret, true
		}
		return "", false
	}
	var rec recorder
	m := newManager(t, &mcp.Options{LookupEnv: lookup, Events: rec.add, Servers: []mcp.ServerConfig{
		// Nothing listens on port 1.
		{Name: "remote", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}, ConnectTimeout: 2 * time.Second},
		{Name: "local", Command: "/nonexistent/server", Args: []string{"--token=${TOKEN}"}, Env: map[string]string{"API_KEY": "${TOKEN}"}},
		{Name: "unset", Command: "server", Env: map[string]string{"API_KEY": "${MISSING}"}},
	}})
	err := m.Warmup(context.Background())
	if err == nil {
		t.Fatal("Warmup succeeded against servers that cannot start")
	}
	texts := []string{err.Error()}
	for _, st := range m.Servers() {
		texts = append(texts, st.Err)
	}
	for _, ev := range rec.evs {
		if e, ok := ev.(*mcp.BootstrapEnd); ok && e.Err != nil {
			texts = append(texts, e.Err.Error())
		}
	}
	for _, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("a secret leaked into %q", s)
		}
	}
	if !strings.Contains(err.Error(), "${MISSING} is not set") {
		t.Errorf("error = %v, want it to name the unset variable", err)
	}
}

func TestToolCacheMakesLazyServersLazy(t *testing.T) {
	dir := t.TempDir()
	srv := newServer(t, "")
	var dials atomic.Int32
	cfg := mcp.ServerConfig{Name: "s", NewTransport: inProcess(t, srv, &dials), Lazy: true}
	// First start: no cache yet, so the lazy server connects to list.
	m1 := newManager(t, &mcp.Options{ToolCache: dir, Servers: []mcp.ServerConfig{cfg}})
	if _, err := m1.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	m1.Close()
	if n := dials.Load(); n != 1 {
		t.Fatalf("first start connected %d times, want 1", n)
	}
	// Second start: tools from the cache, no connection until a call.
	m2 := newManager(t, &mcp.Options{ToolCache: dir, Servers: []mcp.ServerConfig{cfg}})
	ts, err := m2.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || dials.Load() != 1 {
		t.Fatalf("second start: %d tools, %d connections; want 3 tools from the cache and no new connection", len(ts), dials.Load())
	}
	if _, err := m2.Call(context.Background(), "s", "echo", []byte(`{"message":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("connections after the first call = %d, want 2", n)
	}
}
