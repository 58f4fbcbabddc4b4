//go:build unix

package mcp_test

// Integration tests against the MCP reference servers from npm. Install
// them with:
//
//	npm ci --prefix mcp/testdata/node
//
// The tests skip, saying so, when node or the servers are missing.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
)

// serverBin returns the path of an npm-installed server, skipping the test
// when it or node is missing.
func serverBin(t testing.TB, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; install Node.js 18+ to run the MCP reference-server tests")
	}
	p, err := filepath.Abs(filepath.Join("testdata", "node", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed; run: npm ci --prefix mcp/testdata/node", name)
	}
	return p
}

func everything(t testing.TB) mcp.ServerConfig {
	return mcp.ServerConfig{Name: "everything", Command: serverBin(t, "mcp-server-everything"), Args: []string{"stdio"}, ConnectTimeout: 20 * time.Second}
}

// alive reports whether a process (or, for a negative pid, a process
// group) still exists.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// readCalls returns how many read calls process pid has made, from
// /proc/PID/io, or -1 where the system does not say.
func readCalls(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

func resultText(r *session.ToolResult) string {
	var b strings.Builder
	for _, p := range r.Parts {
		if tx, ok := p.(*llm.Text); ok {
			b.WriteString(tx.Text)
		}
	}
	return b.String()
}

func TestEverythingStdioThroughLoop(t *testing.T) {
	var rec recorder
	m := newManager(t, &mcp.Options{Events: rec.add, Servers: []mcp.ServerConfig{everything(t)}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcp_everything_echo", "mcp_everything_get-sum"} {
		if _, ok := m.Set().Lookup(want); !ok {
			t.Fatalf("tool %s missing; have %q", want, names(ts))
		}
	}
	echo, _ := m.Lookup("mcp_everything_echo")
	if a := echo.Spec().Annotations; a == nil || !a.ReadOnly || a.Destructive {
		t.Errorf("echo annotations = %+v, want read-only", a)
	}
	model := llmtest.NewModel(
		llmtest.CallTools(
			llm.ToolCall{ID: "c1", Name: "mcp_everything_echo", Args: json.RawMessage(`{"message":"hello"}`)},
			llm.ToolCall{ID: "c2", Name: "mcp_everything_get-sum", Args: json.RawMessage(`{"a":"2","b":40}`)},
			// A tool error reported by the server itself.
			llm.ToolCall{ID: "c3", Name: "mcp_everything_gzip-file-as-resource", Args: json.RawMessage(`{"name":"x.gz","data":"ftp://example.com/x"}`)},
		),
		llmtest.Reply("done"),
	)
	a, err := agent.New(&agent.Options{Model: model, Tools: ts})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "use the tools"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[llm.CallID]string{}
	isErr := map[llm.CallID]bool{}
	for _, r := range toolResults(res) {
		got[r.CallID] = resultText(r)
		isErr[r.CallID] = r.IsError
	}
	if got["c1"] != "Echo: hello" || isErr["c1"] {
		t.Errorf("echo = %q (error %v)", got["c1"], isErr["c1"])
	}
	if !strings.Contains(got["c2"], "42") || isErr["c2"] {
		t.Errorf("get-sum with a coerced argument = %q (error %v), want 42", got["c2"], isErr["c2"])
	}
	if !isErr["c3"] || !strings.Contains(got["c3"], "Unsupported URL protocol") {
		t.Errorf("gzip with a bad URL = %q (error %v), want the server's error", got["c3"], isErr["c3"])
	}
	// The model saw the results in its next request.
	if n := model.Calls(); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
	// Events: connect and bootstrap, then a before/after pair per call.
	counts := map[string]int{}
	for _, k := range rec.kinds() {
		counts[k]++
	}
	want := map[string]int{"mcp:connect everything": 1, "mcp:bootstrap:end everything": 1, "mcp:tool:before everything": 3, "mcp:tool:after everything": 3}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("event counts (-want +got):\n%s", diff)
	}
	st := m.Servers()[0]
	if st.State != mcp.StateConnected || st.Protocol == "" || st.PID == 0 {
		t.Errorf("status = %+v", st)
	}
	// Resources and prompts are there for hosts.
	rs, err := m.Resources(context.Background(), "everything")
	if err != nil || len(rs) == 0 {
		t.Errorf("resources = %d, %v", len(rs), err)
	}
	ps, err := m.Prompts(context.Background(), "everything")
	if err != nil || len(ps) == 0 {
		t.Errorf("prompts = %d, %v", len(ps), err)
	}
	gp, err := m.GetPrompt(context.Background(), "everything", "simple-prompt", nil)
	if err != nil || len(gp.Messages) == 0 {
		t.Errorf("simple-prompt = %v, %v", gp, err)
	}
}

func TestCloseLeavesNoChildren(t *testing.T) {
	m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{everything(t),
		{Name: "fs", Command: serverBin(t, "mcp-server-filesystem"), Args: []string{t.TempDir()}, ConnectTimeout: 20 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Warmup(context.Background()); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, st := range m.Servers() {
		if st.PID == 0 || !alive(st.PID) {
			t.Fatalf("%s: pid %d not running after Warmup", st.Name, st.PID)
		}
		pids = append(pids, st.PID)
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %s", time.Since(start))
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("server process %d still running after Close", pid)
		}
		if alive(-pid) {
			t.Errorf("process group %d still has members after Close", pid)
		}
	}
}

// startEverythingHTTP runs the everything server with an HTTP transport
// ("streamableHttp" or "sse") on a free port, bound to 127.0.0.1.
func startEverythingHTTP(t *testing.T, transport string) int {
	t.Helper()
	bin := serverBin(t, "mcp-server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	preload, _ := filepath.Abs(filepath.Join("testdata", "node", "loopback.cjs"))
	cmd := exec.Command("node", "--require", preload, bin, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, _ := cmd.StderrPipe()
	cmd.SysProcAttr = helperAttrs()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if t := sc.Text(); strings.Contains(t, "istening") || strings.Contains(t, "running on port") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the %s server did not start", transport)
	}
	// It must not answer on other interfaces.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ip, _, _ := net.ParseCIDR(a.String())
		if ip == nil || ip.IsLoopback() || ip.To4() == nil {
			continue
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(port)), time.Second); err == nil {
			c.Close()
			t.Errorf("the server answers on %s; it must be bound to 127.0.0.1", ip)
		}
	}
	return port
}

func TestEverythingLegacySSE(t *testing.T) {
	port := startEverythingHTTP(t, "sse")
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "everything", URL: fmt.Sprintf("http://127.0.0.1:%d/sse", port), SSE: true}}})
	if err := m.Warmup(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := m.Call(ctx, "everything", "echo", json.RawMessage(`{"message":"over sse"}`))
	if err != nil || res.TextOf() != "Echo: over sse" {
		t.Fatalf("echo over SSE = %v, %v", res, err)
	}
	if st := m.Servers()[0]; st.Transport != mcp.TransportSSE || st.State != mcp.StateConnected {
		t.Errorf("status = %+v", st)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	port := startEverythingHTTP(t, "streamableHttp")
	var seen []string
	var mu sync.Mutex
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{
		Name: "everything", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Headers: map[string]string{"X-Rein-Test": "${REIN_MCP_TEST_HEADER}"},
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			seen = append(seen, r.Header.Get("X-Rein-Test"))
			mu.Unlock()
			return http.DefaultTransport.RoundTrip(r)
		})},
	}}, LookupEnv: func(k string) (string, bool) {
		if k == "REIN_MCP_TEST_HEADER" {
			return "resolved", true
		}
		return "", false
	}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewModel(llmtest.CallTool("c1", "mcp_everything_echo", `{"message":"over http"}`), llmtest.Reply("ok"))
	a, err := agent.New(&agent.Options{Model: model, Tools: ts})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if rs := toolResults(res); len(rs) != 1 || resultText(rs[0]) != "Echo: over http" {
		t.Fatalf("results = %+v", rs)
	}
	if st := m.Servers()[0]; st.Transport != mcp.TransportHTTP || st.State != mcp.StateConnected {
		t.Errorf("status = %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("no requests went through the configured client")
	}
	for _, h := range seen {
		if h != "resolved" {
			t.Errorf("X-Rein-Test = %q, want the resolved template", h)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestKillMidCall(t *testing.T) {
	var rec recorder
	started := make(chan struct{}, 1)
	events := func(ev mcp.Event) {
		rec.add(ev)
		if b, ok := ev.(*mcp.ToolBefore); ok && b.Tool == "trigger-long-running-operation" {
			started <- struct{}{}
		}
	}
	cfg := everything(t)
	m := newManager(t, &mcp.Options{Events: events, Servers: []mcp.ServerConfig{cfg}, Backoff: mcp.Backoff{Initial: 50 * time.Millisecond}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid := m.Servers()[0].PID
	idle := readCalls(pid)
	go func() {
		<-started
		// The call has reached the server once it reads again after idling.
		testwait.For(10*time.Second, func() bool { n := readCalls(pid); return n < 0 || n > idle })
		syscall.Kill(pid, syscall.SIGKILL)
	}()
	model := llmtest.NewModel(
		llmtest.CallTool("c1", "mcp_everything_trigger-long-running-operation", `{"duration":30,"steps":3}`),
		llmtest.CallTool("c2", "mcp_everything_echo", `{"message":"back"}`),
		llmtest.Reply("done"),
	)
	a, err := agent.New(&agent.Options{Model: model, Tools: ts})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := a.Run(ctx, &agent.RunRequest{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 2 {
		t.Fatalf("tool results = %d, want 2", len(rs))
	}
	t.Logf("killed call: %s", resultText(rs[0]))
	if !rs[0].IsError || !strings.Contains(resultText(rs[0]), "everything") {
		t.Errorf("killed call = %q (error %v), want an error result naming the server", resultText(rs[0]), rs[0].IsError)
	}
	if rs[1].IsError || resultText(rs[1]) != "Echo: back" {
		t.Errorf("call after the kill = %q (error %v), want the reconnected server's answer", resultText(rs[1]), rs[1].IsError)
	}
	if res.Text != "done" {
		t.Errorf("the run did not continue: %q", res.Text)
	}
	st := m.Servers()[0]
	if st.PID == pid || st.PID == 0 || st.State != mcp.StateConnected {
		t.Errorf("status after the kill = %+v, want a new connected process", st)
	}
	if alive(pid) {
		t.Errorf("the killed server %d was not reaped", pid)
	}
	var sawDrop, sawReconnect, sawToolError bool
	for _, ev := range rec.evs {
		switch e := ev.(type) {
		case *mcp.Disconnected:
			sawDrop = true
		case *mcp.Connected:
			sawReconnect = sawReconnect || e.Reconnect
		case *mcp.ToolError:
			sawToolError = true
		}
	}
	if !sawDrop || !sawReconnect || !sawToolError {
		t.Errorf("events: disconnect %v, reconnect %v, tool error %v; want all", sawDrop, sawReconnect, sawToolError)
	}
}

func TestFilesystemDryRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "fs", Command: serverBin(t, "mcp-server-filesystem"), Args: []string{dir}, ConnectTimeout: 20 * time.Second}}})
	ts, err := m.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "notes.txt"))
	write := fmt.Sprintf(`{"path":%q,"content":"overwritten"}`, filepath.Join(dir, "notes.txt"))
	mkdir := fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "sub"))
	model := llmtest.NewModel(
		llmtest.CallTools(
			llm.ToolCall{ID: "r", Name: "mcp_fs_read_text_file", Args: json.RawMessage(read)},
			llm.ToolCall{ID: "w", Name: "mcp_fs_write_file", Args: json.RawMessage(write)},
			llm.ToolCall{ID: "d", Name: "mcp_fs_create_directory", Args: json.RawMessage(mkdir)},
		),
		llmtest.Reply("done"),
	)
	a, err := agent.New(&agent.Options{Model: model, Tools: ts, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[llm.CallID]*session.ToolResult{}
	for _, r := range toolResults(res) {
		got[r.CallID] = r
	}
	if r := got["r"]; r == nil || r.IsError || !strings.Contains(resultText(r), "keep me") {
		t.Errorf("read in dry run = %+v, want the file's text", r)
	}
	for _, id := range []llm.CallID{"w", "d"} {
		if r := got[id]; r == nil || strings.Contains(resultText(r), "Successfully") {
			t.Errorf("%s in dry run = %q, want a stub", id, resultText(r))
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
	if string(b) != "keep me" {
		t.Errorf("the file changed in dry run: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was created in dry run: %v", err)
	}
}
