//go:build unix

package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/mcp"
)

// TestMain lets the test binary play a raw stdio MCP server written
// message by message, for the protocol corners the SDK servers never hit,
// and the conformance suite's client.
func TestMain(m *testing.M) {
	if mode := os.Getenv("REIN_MCP_RAW_SERVER"); mode != "" {
		rawServer(mode)
		os.Exit(0)
	}
	if os.Getenv("REIN_MCP_CONFORMANCE") == "library" && len(os.Args) > 1 {
		if err := conformanceClient(os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, "rein conformance client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("REIN_MCP_HOST") != "" {
		host()
		return
	}
	os.Exit(m.Run())
}

// rawServer speaks newline-delimited JSON-RPC on stdin/stdout. mode is a
// comma-separated list:
//
//	early-list-changed  send tools/list_changed before answering initialize
//	version=V           answer initialize with protocol version V
//
// The first tools/list returns alpha; later ones alpha and beta.
func rawServer(mode string) {
	version := ""
	early, linger := false, false
	defer func() {
		if linger { // outlive stdin: only the kernel's death signal ends us
			parkUntilKilled()
		}
	}()
	for _, f := range strings.Split(mode, ",") {
		switch {
		case f == "linger":
			linger = true
		case f == "early-list-changed":
			early = true
		case strings.HasPrefix(f, "version="):
			version = strings.TrimPrefix(f, "version=")
		}
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	lists := 0
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue // notifications and responses
		}
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}) }
		switch msg.Method {
		case "initialize":
			if early {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
			}
			v := version
			if v == "" {
				v = msg.Params.ProtocolVersion
			}
			reply(map[string]any{
				"protocolVersion": v,
				"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
				"serverInfo":      map[string]any{"name": "raw", "version": "1"},
				"instructions":    "Raw server, protocol " + v,
			})
		case "tools/list":
			lists++
			tools := []any{map[string]any{"name": "alpha", "inputSchema": map[string]any{"type": "object"}}}
			if lists > 1 {
				tools = append(tools, map[string]any{"name": "beta", "inputSchema": map[string]any{"type": "object"}})
			}
			reply(map[string]any{"tools": tools})
		case "tools/call":
			reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": "called " + msg.Params.Name}}})
		case "ping":
			reply(map[string]any{})
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + msg.Method}})
		}
	}
}

// host plays a rein process: it starts a lingering raw server, prints its
// pid and waits to be killed.
func host() {
	exe, _ := os.Executable()
	m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{{Name: "raw", Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"REIN_MCP_RAW_SERVER": "linger"}}}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if err := m.Warmup(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(m.Servers()[0].PID)
	parkUntilKilled()
}

// parkUntilKilled blocks until a signal ends the process. It waits on a
// signal, which the runtime never takes for a deadlock; a SIGTERM is
// raised again with its default action, so it ends the process as before.
func parkUntilKilled() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	<-c
	signal.Reset(syscall.SIGTERM)
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	<-c // never: the default action ends the process
}

func rawConfig(t *testing.T, mode string) mcp.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Name: "raw", Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"REIN_MCP_RAW_SERVER": mode}}
}

func TestListChangedBeforeInitializeReply(t *testing.T) {
	var rec recorder
	m := newManager(t, &mcp.Options{Events: rec.add, Servers: []mcp.ServerConfig{rawConfig(t, "early-list-changed")}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := m.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	// The early notification must neither break nor deadlock the
	// handshake; it leads to a second listing, which adds beta.
	testwait.For(10*time.Second, func() bool { return len(m.Set().Tools()) >= 2 })
	if diff := cmp.Diff([]string{"mcp_raw_alpha", "mcp_raw_beta"}, names(m.Set().Tools())); diff != "" {
		t.Fatalf("tools after the refresh (-want +got):\n%s", diff)
	}
	res, err := m.Call(ctx, "raw", "beta", nil)
	if err != nil || res.TextOf() != "called beta" {
		t.Fatalf("beta = %v, %v", res, err)
	}
	var changed *mcp.ToolsChanged
	for _, ev := range rec.evs {
		if c, ok := ev.(*mcp.ToolsChanged); ok {
			changed = c
		}
	}
	if changed == nil || len(changed.Tools) != 2 {
		t.Errorf("tools changed event = %+v", changed)
	}
}

func TestProtocolVersionNegotiation(t *testing.T) {
	for _, v := range []string{"2025-06-18", "2024-11-05"} {
		t.Run("down to "+v, func(t *testing.T) {
			m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{rawConfig(t, "version="+v)}})
			if err := m.Warmup(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := m.Servers()[0]
			if st.Protocol != v || st.State != mcp.StateConnected {
				t.Errorf("status = %+v, want connected at %s", st, v)
			}
			if got := m.Instructions(); !strings.Contains(got, "Raw server, protocol "+v) {
				t.Errorf("instructions = %q", got)
			}
			res, err := m.Call(context.Background(), "raw", "alpha", nil)
			if err != nil || res.TextOf() != "called alpha" {
				t.Fatalf("alpha = %v, %v", res, err)
			}
		})
	}
	t.Run("unsupported version fails clearly", func(t *testing.T) {
		m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{rawConfig(t, "version=2023-01-01")}})
		err := m.Warmup(context.Background())
		if err == nil || !strings.Contains(err.Error(), "2023-01-01") {
			t.Fatalf("Warmup = %v, want an error naming the version", err)
		}
		if pid := m.Servers()[0].PID; pid != 0 {
			t.Errorf("a failed server left pid %d", pid)
		}
	})
}

// TestServersDieWithRein kills a host process outright (no Close) and
// checks that its server, which ignores the end of its input, dies too.
func TestServersDieWithRein(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "REIN_MCP_HOST=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("host: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("host said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("server %d not running", pid)
	}
	cmd.Process.Kill()
	if !testwait.For(5*time.Second, func() bool { return !alive(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("server %d outlived its killed host", pid)
	}
}
