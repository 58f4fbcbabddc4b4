//go:build unix

package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/internal/golden"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/sandbox"
)

func TestMain(m *testing.M) {
	exec.RunHelper()
	os.Exit(m.Run())
}

func newShell(t *testing.T, o *Options) (*Shell, string) {
	t.Helper()
	ws := t.TempDir()
	if o == nil {
		o = &Options{}
	}
	if o.Policy == nil {
		o.Policy = &sandbox.Policy{Root: ws, Commands: sandbox.CommandRules{Deny: []string{"rm -rf", "git push"}}}
	}
	o.KillGrace = 200 * time.Millisecond
	if o.Exec == nil {
		// These tests read the pids of what commands start, so they run
		// where rein sees the same pids; the sandboxed default has its
		// own tests.
		o.Exec = exec.NewUnconfined()
		t.Cleanup(func() { o.Exec.Close() })
	}
	s := New(o)
	t.Cleanup(func() { s.Close() })
	root, _ := o.Policy.RootDir()
	return s, root
}

func callTool(t *testing.T, s *Shell, name, args string) *tool.Result {
	t.Helper()
	return callCtx(t, context.Background(), s, name, args)
}

func callCtx(t *testing.T, ctx context.Context, s *Shell, name, args string) *tool.Result {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Spec().Name == name {
			res, err := tl.Call(ctx, &tool.Call{ID: "c", Name: name, Args: json.RawMessage(args), Session: "s", Progress: func(tool.Progress) {}})
			if err != nil {
				t.Fatalf("%s %s: %v", name, args, err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func text(r *tool.Result) string {
	var b strings.Builder
	if r.IsError {
		b.WriteString("[error] ")
	}
	for _, p := range r.Parts {
		b.WriteString(p.(*llm.Text).Text)
	}
	return b.String()
}

var (
	durRE   = regexp.MustCompile(`\b\d+(\.\d+)?(µs|ms|s|m0s)\b`)
	spillRE = regexp.MustCompile(`\.rein/spill/[a-z0-9-]+\.log`)
	pgidRE  = regexp.MustCompile(`process group \d+`)
)

func normalise(s, root string) string {
	s = strings.ReplaceAll(s, root, "$ROOT")
	s = spillRE.ReplaceAllString(s, "<log>")
	s = pgidRE.ReplaceAllString(s, "process group <pgid>")
	return durRE.ReplaceAllString(s, "<dur>")
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), []byte(got))
}

func TestShellResults(t *testing.T) {
	tests := []struct {
		name string
		opts *Options
		args string
	}{
		{"ok", nil, `{"command":"echo hello; echo oops >&2"}`},
		{"exit_code", nil, `{"command":"echo partial; exit 3"}`},
		{"no_output", nil, `{"command":"true"}`},
		{"cwd", nil, `{"command":"pwd"}`},
		{"denied", nil, `{"command":"ls && bash -c 'rm -rf /'"}`},
		{"denied_git", nil, `{"command":"cd x; git -C . push origin"}`},
		{"unparsable", nil, `{"command":"echo 'unclosed"}`},
		{"empty", nil, `{"command":"  "}`},
		{"bad_args", nil, `{"command":7}`},
		{"timeout", nil, `{"command":"echo before; sleep 30","timeout":1}`},
		{"spill", &Options{OutputLimit: 200}, `{"command":"seq 1 2000"}`},
		{"lingering", nil, `{"command":"sleep 60 & echo started"}`},
		{"signal", nil, `{"command":"kill -9 $$"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newShell(t, tt.opts)
			res := callTool(t, s, "shell", tt.args)
			checkGolden(t, "shell_"+tt.name, normalise(text(res), root))
		})
	}
}

func TestB56_SpillHoldsFullOutput(t *testing.T) {
	s, root := newShell(t, &Options{OutputLimit: 200})
	res := callTool(t, s, "shell", `{"command":"seq 1 2000"}`)
	p, _ := res.Meta[tool.MetaSpillPath].(string)
	if p == "" || !strings.HasPrefix(p, filepath.Join(root, ".rein", "spill")) {
		t.Fatalf("spill path %q is not in the workspace's .rein/spill", p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if string(data) != want.String() {
		t.Errorf("spill file holds %d bytes, want the full %d", len(data), want.Len())
	}
	out := text(res)
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.Contains(out, "1999\n2000\n") {
		t.Errorf("output does not keep head and tail:\n%s", out)
	}
}

func TestEnvFiltering(t *testing.T) {
	t.Setenv("REIN_TEST_API_KEY", "k")
	t.Setenv("REIN_TEST_AUTH_TOKEN", "t")
	t.Setenv("REIN_TEST_DB_PASSWORD", "p")
	t.Setenv("REIN_TEST_PLAIN", "plain")
	t.Setenv("REIN_TEST_HOLDS", "x-held-secret-x")
	t.Setenv("LC_REIN_TEST", "c")
	s, _ := newShell(t, nil)
	out := text(callTool(t, s, "shell", `{"command":"env"}`))
	for _, bad := range []string{"REIN_TEST_"} {
		if strings.Contains(out, bad) {
			t.Errorf("child saw %s: the default passes only the allow-list", bad)
		}
	}
	for _, good := range []string{"LC_REIN_TEST=c", "GIT_TERMINAL_PROMPT=0", "PAGER=cat", "PATH="} {
		if !strings.Contains(out, good) {
			t.Errorf("child did not see %s", good)
		}
	}
	// A pattern passes plain names, never names that look like
	// credentials; an exact name does, unless its value is a secret.
	s2, _ := newShell(t, &Options{Env: []string{"REIN_TEST_*", "REIN_TEST_DB_PASSWORD"}, Secrets: []string{"held-secret"}})
	out = text(callTool(t, s2, "shell", `{"command":"env"}`))
	for _, good := range []string{"REIN_TEST_PLAIN=plain", "REIN_TEST_DB_PASSWORD=p"} {
		if !strings.Contains(out, good) {
			t.Errorf("allow-list did not pass %s:\n%s", good, out)
		}
	}
	for _, bad := range []string{"REIN_TEST_API_KEY", "REIN_TEST_AUTH_TOKEN", "held-secret", "LC_REIN_TEST"} {
		if strings.Contains(out, bad) {
			t.Errorf("child saw %s:\n%s", bad, out)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if !testwait.For(5*time.Second, func() bool { return !alive(pid) }) {
			t.Fatalf("process %d is still running", pid)
		}
	}
}

func readPids(t *testing.T, root string, names ...string) []int {
	t.Helper()
	var pids []int
	for _, n := range names {
		var pid int
		if !testwait.For(5*time.Second, func() bool {
			data, err := os.ReadFile(filepath.Join(root, n))
			p, perr := strconv.Atoi(strings.TrimSpace(string(data)))
			pid = p
			return err == nil && perr == nil && pid > 0
		}) {
			t.Fatalf("%s never appeared", n)
		}
		pids = append(pids, pid)
	}
	return pids
}

// spawner starts two grandchildren (one in a nested subshell) and records
// every pid.
const spawner = `echo $$ > leader.pid; (sleep 60 & echo $! > gc1.pid; wait) & sleep 60 & echo $! > gc2.pid; echo spawned; wait`

func TestB56_TimeoutKillsGroup(t *testing.T) {
	s, root := newShell(t, nil)
	done := make(chan *tool.Result)
	go func() { done <- callTool(t, s, "shell", `{"command":"`+spawner+`","timeout":1}`) }()
	pids := readPids(t, root, "leader.pid", "gc1.pid", "gc2.pid")
	res := <-done
	if !res.IsError || !strings.Contains(text(res), "Timed out after 1s") {
		t.Errorf("result = %s", text(res))
	}
	waitGone(t, pids...)
}

func TestForegroundCancel(t *testing.T) {
	s, root := newShell(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		for _, tl := range s.Tools() {
			if tl.Spec().Name == "shell" {
				_, err := tl.Call(ctx, &tool.Call{Name: "shell", Args: json.RawMessage(`{"command":"` + spawner + `"}`)})
				errc <- err
			}
		}
	}()
	pids := readPids(t, root, "leader.pid", "gc1.pid", "gc2.pid")
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	waitGone(t, pids...)
}

func TestB56_BackgroundTask(t *testing.T) {
	s, root := newShell(t, nil)
	res := callTool(t, s, "shell", `{"command":"for i in 1 2 3; do echo line$i; sleep 0.1; done","run_in_background":true}`)
	start := normalise(text(res), root)
	if start != `Started background task t1 (process group <pgid>). Its output goes to <log>; check on it with task_output, task_wait or task_kill using id "t1".` {
		t.Errorf("start = %s", start)
	}
	var transcript strings.Builder
	transcript.WriteString(start + "\n\n")
	res = callTool(t, s, "task_wait", `{"id":"t1","timeout":10}`)
	transcript.WriteString(normalise(text(res), root) + "\n\n")
	res = callTool(t, s, "task_output", `{"id":"t1"}`)
	transcript.WriteString(normalise(text(res), root) + "\n\n")
	res = callTool(t, s, "task_kill", `{"id":"t1"}`)
	transcript.WriteString(normalise(text(res), root) + "\n\n")
	res = callTool(t, s, "task_output", `{"id":"t9"}`)
	transcript.WriteString(normalise(text(res), root) + "\n")
	checkGolden(t, "background", transcript.String())
	if ex := s.Drain(); len(ex) != 0 {
		t.Errorf("Drain = %v, want nothing: the model saw the exit through task_wait", ex)
	}
}

func TestB56_BackgroundPollAndKillGrandchildren(t *testing.T) {
	s, root := newShell(t, nil)
	callTool(t, s, "shell", `{"command":"`+spawner+`","run_in_background":true}`)
	pids := readPids(t, root, "leader.pid", "gc1.pid", "gc2.pid")
	var out string
	// The task's header repeats the command, which says "spawned" too:
	// wait for the word in the output itself.
	testwait.For(5*time.Second, func() bool {
		out = text(callTool(t, s, "task_output", `{"id":"t1"}`))
		return strings.Contains(out, "New output:\nspawned")
	})
	if !strings.Contains(out, "is running") || !strings.Contains(out, "New output:\nspawned") {
		t.Fatalf("task_output = %s", out)
	}
	if again := text(callTool(t, s, "task_output", `{"id":"t1"}`)); !strings.HasSuffix(again, "(no new output)") {
		t.Errorf("second poll = %s, want no new output", again)
	}
	wait := text(callTool(t, s, "task_wait", `{"id":"t1","timeout":0.2}`))
	if !strings.HasPrefix(wait, "Still running after waiting 200ms.") {
		t.Errorf("task_wait = %s", wait)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d died before the kill", pid)
		}
	}
	kill := text(callTool(t, s, "task_kill", `{"id":"t1"}`))
	if !strings.Contains(kill, "Background task t1") || !strings.Contains(kill, "was killed") {
		t.Errorf("task_kill = %s", kill)
	}
	waitGone(t, pids...)
}

func TestB56_ExitsDrainedAndCloseKills(t *testing.T) {
	before := runtime.NumGoroutine()
	s, root := newShell(t, nil)
	callTool(t, s, "shell", `{"command":"echo quick; exit 4","run_in_background":true}`)
	callTool(t, s, "shell", `{"command":"`+spawner+`","run_in_background":true}`)
	pids := readPids(t, root, "leader.pid", "gc1.pid", "gc2.pid")
	var exits []TaskExit
	testwait.For(5*time.Second, func() bool {
		exits = s.Drain()
		return len(exits) != 0
	})
	if len(exits) != 1 || exits[0].ID != "t1" || exits[0].ExitCode != 4 || exits[0].Reason != "exited" {
		t.Fatalf("Drain = %+v, want t1 exited with 4", exits)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids...)
	exits = s.Drain()
	if len(exits) != 1 || exits[0].ID != "t2" || exits[0].Reason != "closed" {
		t.Fatalf("Drain after Close = %+v, want t2 closed", exits)
	}
	if got := normalise(exits[0].String(), root); !strings.Contains(got, "was stopped because the shell closed") {
		t.Errorf("exit text = %s", got)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if res := callTool(t, s, "shell", `{"command":"echo hi"}`); !res.IsError || !strings.Contains(text(res), "closed") {
		t.Errorf("call after Close = %s", text(res))
	}
	if res := callTool(t, s, "shell", `{"command":"echo hi","run_in_background":true}`); !res.IsError {
		t.Errorf("background call after Close = %s", text(res))
	}
	testwait.For(2*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestBackgroundTimeout(t *testing.T) {
	s, _ := newShell(t, nil)
	callTool(t, s, "shell", `{"command":"sleep 30","run_in_background":true,"timeout":0.2}`)
	out := text(callTool(t, s, "task_wait", `{"id":"t1","timeout":5}`))
	if !strings.Contains(out, "hit its time limit and was killed") {
		t.Errorf("task_wait = %s", out)
	}
}

func TestNoPolicy(t *testing.T) {
	s := New(nil)
	defer s.Close()
	res := callTool(t, s, "shell", `{"command":"echo hi"}`)
	if !res.IsError || !strings.Contains(text(res), "no workspace") {
		t.Errorf("result = %s", text(res))
	}
}

func TestAnnotations(t *testing.T) {
	s := New(nil)
	defer s.Close()
	got := map[string]tool.Annotations{}
	for _, tl := range s.Tools() {
		got[tl.Spec().Name] = *tl.Spec().Annotations
		var v map[string]any
		if err := json.Unmarshal(tl.Spec().Schema, &v); err != nil {
			t.Errorf("%s schema: %v", tl.Spec().Name, err)
		}
	}
	want := map[string]tool.Annotations{
		"shell":       {Destructive: true, OpenWorld: true},
		"task_output": {ReadOnly: true},
		"task_kill":   {Destructive: true, Idempotent: true},
		"task_wait":   {ReadOnly: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestDeniedCommandDoesNotRun(t *testing.T) {
	s, root := newShell(t, nil)
	res := callTool(t, s, "shell", `{"command":"touch made; echo x | (rm -rf nothing)"}`)
	if !res.IsError {
		t.Fatalf("result = %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(root, "made")); err == nil {
		t.Errorf("part of a denied command line ran")
	}
}

func TestProgressReportsDescription(t *testing.T) {
	s, _ := newShell(t, nil)
	var got []string
	for _, tl := range s.Tools() {
		if tl.Spec().Name == "shell" {
			tl.Call(context.Background(), &tool.Call{Name: "shell", Args: json.RawMessage(`{"command":"true","description":"check the build"}`),
				Progress: func(p tool.Progress) { got = append(got, p.Message) }})
		}
	}
	if diff := cmp.Diff([]string{"check the build"}, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestCloseStopsForegroundCommand(t *testing.T) {
	s, root := newShell(t, nil)
	done := make(chan *tool.Result)
	go func() { done <- callTool(t, s, "shell", `{"command":"`+spawner+`"}`) }()
	pids := readPids(t, root, "leader.pid", "gc1.pid", "gc2.pid")
	s.Close()
	res := <-done
	if !res.IsError || !strings.Contains(text(res), "the shell was closed") {
		t.Errorf("result = %s", text(res))
	}
	waitGone(t, pids...)
}
