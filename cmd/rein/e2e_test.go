package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/reinhq/rein/internal/golden"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	texec "github.com/reinhq/rein/tool/exec"
)

var update = golden.Update // the shared -update flag

// reinBin is the rein binary built once for the whole test run.
var reinBin string

func TestMain(m *testing.M) {
	texec.RunHelper() // tests run commands in sandboxes whose helper is this binary
	flag.Parse()
	dir, err := os.MkdirTemp("", "rein-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reinBin = filepath.Join(dir, "rein")
	args := []string{"build", "-o", reinBin}
	if os.Getenv("REIN_TEST_RACE") != "" {
		// The binary itself under the race detector (slower to build).
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build rein:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is a test's isolated environment: its own config, state and workspace.
type env struct {
	t     testing.TB
	home  string
	work  string
	store string
	vars  []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	home := t.TempDir()
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, home: home, work: work, store: "sqlite:" + filepath.Join(home, "sessions.db")}
	e.vars = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"TERM=dumb",
	}
	return e
}

// result is one finished rein process.
type result struct {
	code           int
	stdout, stderr string
}

func (e *env) cmd(ctx context.Context, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, reinBin, args...)
	cmd.Env = append(append([]string{}, e.vars...), extraEnv...)
	cmd.Dir = e.work
	cmd.Stdin = strings.NewReader("")
	return cmd
}

// run runs rein to completion with an empty stdin.
func (e *env) run(extraEnv []string, args ...string) result {
	e.t.Helper()
	return e.runStdin(strings.NewReader(""), extraEnv, args...)
}

// wire is one provider wire the fake server speaks.
type wire struct {
	name  string
	model string
	key   string
	url   func(base string) string
}

var wires = []wire{
	{name: "anthropic", model: "anthropic/claude-sonnet-4-5", key: "ANTHROPIC_API_KEY", url: func(b string) string { return b }},
	{name: "openai", model: "openai/gpt-5", key: "OPENAI_API_KEY", url: func(b string) string { return b + "/v1" }},
}

func (w wire) args(srv *llmtest.Server, e *env, rest ...string) []string {
	return append([]string{"run", "--model", w.model, "--base-url", w.url(srv.URL), "--store", e.store, "--cwd", e.work}, rest...)
}

func (w wire) env() []string { return []string{w.key + "=sk-test-secret-key"} }

func TestRunTextAnswer(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			m := llmtest.NewModel(llmtest.Reply("Hello from the fake model."))
			srv := llmtest.NewServer(t, m)
			r := e.run(w.env(), w.args(srv, e, "say hello")...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			if diff := cmp.Diff("Hello from the fake model.\n", r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(r.stderr, "session ") {
				t.Errorf("stderr does not name the session:\n%s", r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "sk-test-secret-key") {
				t.Error("the API key leaked into the output")
			}
			reqs := m.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if got := lastUserText(reqs[0]); got != "say hello" {
				t.Errorf("prompt sent = %q, want %q", got, "say hello")
			}
		})
	}
}

func TestRunToolRoundTrip(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			m := llmtest.NewModel(
				llmtest.CallTool("call_1", "write", `{"path":"notes/hello.txt","content":"hi there\n"}`),
				llmtest.Reply("I wrote notes/hello.txt."),
			)
			srv := llmtest.NewServer(t, m)
			r := e.run(w.env(), w.args(srv, e, "--approve", "auto", "write a file")...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			b, err := os.ReadFile(filepath.Join(e.work, "notes", "hello.txt"))
			if err != nil {
				t.Fatalf("the file was not written: %v\nstderr:\n%s", err, r.stderr)
			}
			if string(b) != "hi there\n" {
				t.Errorf("file = %q", b)
			}
			if !strings.Contains(r.stderr, "→ write") || !strings.Contains(r.stderr, "write ok") {
				t.Errorf("stderr does not show the tool activity:\n%s", r.stderr)
			}
			if !strings.Contains(r.stdout, "I wrote notes/hello.txt.") {
				t.Errorf("stdout = %q", r.stdout)
			}
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if !hasToolResult(reqs[1], "call_1") {
				t.Error("the second request carries no result for call_1")
			}
		})
	}
}

func TestRunJSONEvents(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "ls", `{"path":"."}`),
		llmtest.Reply("Done."),
	)
	srv := llmtest.NewServer(t, m)
	if err := os.WriteFile(filepath.Join(e.work, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run(w.env(), w.args(srv, e, "--json", "list the files")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var types []string
	var seqs []int64
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	var lastType string
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		// Text deltas and the closing result are not session events.
		json.Unmarshal(raw["type"], &lastType)
		if lastType == "text.delta" || lastType == "result" {
			continue
		}
		ev, err := session.DecodeEvent(sc.Bytes())
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"seq", "time", "session", "turn", "run", "type", "data"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("event %d has no %q field: %s", ev.Seq, k, sc.Text())
			}
		}
		seqs = append(seqs, ev.Seq)
		if ev.Data.EventType() != session.TypeAssistantChunk {
			types = append(types, ev.Data.EventType())
		}
		switch d := ev.Data.(type) {
		case *session.ToolResult:
			if d.CallID != "call_1" || d.IsError || !strings.Contains(resultText(d.Parts), "a.txt") {
				t.Errorf("tool.result = %+v", d)
			}
		case *session.TurnEnd:
			if d.Reason != session.EndCompleted {
				t.Errorf("turn.end reason = %s", d.Reason)
			}
		}
	}
	if lastType != "result" {
		t.Errorf("the last line is a %q, want the result", lastType)
	}
	want := []string{
		"turn.start", "user.message", "step.start", "request.header", "assistant.message", "tool.call", "tool.result", "step.end",
		"step.start", "assistant.message", "step.end", "turn.end",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Errorf("seqs not consecutive: %v", seqs)
			break
		}
	}
}

func TestRunSessionContinues(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			m := llmtest.NewModel(llmtest.Reply("The answer is 42."), llmtest.Reply("You asked about the answer."))
			srv := llmtest.NewServer(t, m)
			r := e.run(w.env(), w.args(srv, e, "--new-session", "s-continue", "what is the answer?")...)
			if r.code != 0 {
				t.Fatalf("first run: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			r = e.run(w.env(), w.args(srv, e, "--session", "s-continue", "what did I ask?")...)
			if r.code != 0 {
				t.Fatalf("second run: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			got := transcript(reqs[1])
			want := []string{"user: what is the answer?", "assistant: The answer is 42.", "user: what did I ask?"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("second request's messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunRetriesOverloaded(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529, RetryAfter: 100 * time.Millisecond}),
		llmtest.Reply("Made it."),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, "try")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r.stdout != "Made it.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "retrying") {
		t.Errorf("stderr does not report the retry:\n%s", r.stderr)
	}
	if len(srv.Requests()) != 2 {
		t.Errorf("%d HTTP requests, want 2", len(srv.Requests()))
	}
}

func TestRunInterruptThenResume(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "Thinking about it"}),
		llmtest.Reply("Resumed fine."),
	)
	srv := llmtest.NewServer(t, m)
	// On a terminal the text streams as it comes: wait for it, then press
	// Ctrl-C. The partial answer stays on the screen.
	s := startTmux(t, e, w.env(), w.args(srv, e, "--new-session", "s-int", "a long question")...)
	s.waitFor("Thinking about it")
	s.keys("C-c")
	if scr := s.waitFor("[exit 130]"); !strings.Contains(scr, "Thinking about it") {
		t.Errorf("the partial answer left the screen:\n%s", scr)
	}

	r := e.run(w.env(), w.args(srv, e, "--session", "s-int", "go on")...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r.stdout != "Resumed fine.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	tr := transcript(reqs[1])
	if len(tr) == 0 || tr[0] != "user: a long question" || tr[len(tr)-1] != "user: go on" {
		t.Errorf("resumed request's messages = %q", tr)
	}
}

func TestRunMissingKey(t *testing.T) {
	e := newEnv(t)
	r := e.run(nil, "run", "--store", "mem:", "hello")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", r.code, r.stderr)
	}
	for _, s := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "--model ollama/<name>", "rein replay examples/sessions/hello.ndjson"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr does not mention %q:\n%s", s, r.stderr)
		}
	}
	r = e.run(nil, "run", "--store", "mem:", "--model", "openai/gpt-5", "hello")
	if r.code != 2 || !strings.Contains(r.stderr, "export OPENAI_API_KEY=") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestRunApproveDenyBlocksWrite(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	write := `{"path":"out.txt","content":"x"}`
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "write", write),
		llmtest.CallTool("call_2", "write", write),
		llmtest.CallTool("call_3", "write", write),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, "--approve", "deny", "--max-steps", "2", "write out.txt")...)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.work, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("out.txt exists (err %v): the write was not blocked", err)
	}
	if !strings.Contains(r.stderr, "step limit") {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) < 2 || !strings.Contains(toolResultText(reqs[1], "call_1"), "denied") {
		t.Errorf("the model was not told the write was denied: %q", toolResultText(reqs[len(reqs)-1], "call_1"))
	}
}

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "unknown flag", args: []string{"run", "--bogus", "x"}, want: []string{"unknown flag: --bogus", "rein run --help"}},
		{name: "no prompt", args: []string{"run"}, want: []string{"PROMPT", "rein run --help"}},
		{name: "bad approve", args: []string{"run", "--model", "ollama/x", "--approve", "maybe", "x"}, want: []string{"--approve", "auto, ask or deny"}},
		{name: "bad store", args: []string{"run", "--model", "ollama/x", "--store", "redis:x", "x"}, want: []string{"sqlite:PATH"}},
		{name: "bad tools", args: []string{"run", "--model", "ollama/x", "--tools", "rm", "x"}, want: []string{`unknown tool "rm"`}},
		{name: "unknown command", args: []string{"frobnicate"}, want: []string{"unknown command"}},
		{name: "bad timeout", args: []string{"run", "--timeout", "soon", "x"}, want: []string{"--timeout", "rein run --help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.run(nil, tt.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", r.code, r.stderr)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not mention %q:\n%s", s, r.stderr)
				}
			}
		})
	}
}

func TestRunShowContext(t *testing.T) {
	e := newEnv(t)
	if err := os.Mkdir(filepath.Join(e.home, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.home, "AGENTS.md"), []byte("Outer rule."), 0o644)
	os.WriteFile(filepath.Join(e.work, "CLAUDE.md"), []byte("Inner rule."), 0o644)
	r := e.run(nil, "run", "--show-context", "--tools", "read,shell")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	outer, inner := strings.Index(r.stdout, "Outer rule."), strings.Index(r.stdout, "Inner rule.")
	if outer < 0 || inner < 0 || outer > inner {
		t.Errorf("context files missing or out of order:\n%s", r.stdout)
	}
	for _, s := range []string{"read ", "shell "} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("tools do not list %q:\n%s", s, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\nwrite ") {
		t.Errorf("--tools read,shell still lists write:\n%s", r.stdout)
	}
}

func TestVersion(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := e.run(nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "rein ") {
			t.Errorf("rein %v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

// transcript renders a request's messages as "role: text" lines.
func transcript(req *llm.Request) []string {
	var out []string
	for _, msg := range req.Messages {
		var b strings.Builder
		for _, p := range msg.Parts {
			if t, ok := p.(*llm.Text); ok {
				b.WriteString(t.Text)
			}
		}
		if b.Len() > 0 {
			out = append(out, string(msg.Role)+": "+b.String())
		}
	}
	return out
}

func lastUserText(req *llm.Request) string {
	tr := transcript(req)
	if len(tr) == 0 {
		return ""
	}
	return strings.TrimPrefix(tr[len(tr)-1], "user: ")
}

func hasToolResult(req *llm.Request, id llm.CallID) bool {
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			if r, ok := p.(*llm.ToolResult); ok && r.CallID == id {
				return true
			}
		}
	}
	return false
}

func toolResultText(req *llm.Request, id llm.CallID) string {
	for _, msg := range req.Messages {
		for _, p := range msg.Parts {
			if r, ok := p.(*llm.ToolResult); ok && r.CallID == id {
				return resultText(r.Parts)
			}
		}
	}
	return ""
}

func TestRunCrashThenRepair(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "Half an answer"}),
		llmtest.Reply("Back again."),
	)
	srv := llmtest.NewServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// On a pipe text mode prints only recorded answers: the live deltas
	// of --json say when the response is half way.
	cmd := e.cmd(ctx, w.env(), w.args(srv, e, "--new-session", "s-crash", "--json", "first")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	half := false
	for !half && lines.Scan() {
		half = strings.Contains(lines.Text(), `"text.delta","text":"Half an answer"`)
	}
	if !half {
		t.Fatalf("the stream ended before its text arrived: %v", lines.Err())
	}
	// A crash: no chance to close the turn.
	cmd.Process.Kill()
	cmd.Wait()

	r := e.run(w.env(), w.args(srv, e, "--session", "s-crash", "--json", "second")...)
	if r.code != 0 {
		t.Fatalf("after the crash: exit %d\n%s", r.code, r.stderr)
	}
	tr := strings.Join(transcript(m.Requests()[1]), "\n")
	if !strings.HasPrefix(tr, "user: first") || !strings.HasSuffix(tr, "second") {
		t.Errorf("request after the crash = %q", tr)
	}
	// The log holds the repair that closed the crashed turn.
	show := e.run(nil, "sessions", "tail", "--store", e.store, "s-crash")
	if !strings.Contains(show.stdout, "interrupted") {
		t.Errorf("the crashed turn was not closed as interrupted:\n%s", show.stdout)
	}
}

// A shell output too long for the model is spilled inside the workspace,
// and the model can read the whole of it with the read tool.
func TestRunSpilledOutputIsReadable(t *testing.T) {
	e := newEnv(t)
	spillPath := regexp.MustCompile(`\S*\.rein/spill/\S+`)
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"seq 1 20000"}`),
		llmtest.Respond(func(req *llm.Request) llmtest.Entry {
			path := strings.TrimRight(spillPath.FindString(toolResultText(req, "c1")), ".,;)]")
			if path == "" {
				return llmtest.Reply("no spill path")
			}
			args, _ := json.Marshal(map[string]any{"path": path, "offset": 19990, "limit": 20})
			return llmtest.CallTool("c2", "read", string(args))
		}),
		llmtest.Reply("The last number is 20000."),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "count to 20000")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		got := toolResultText(reqs[len(reqs)-1], "c1")
		t.Fatalf("%d requests, want 3: no spill path in the %d-byte result, which ends %q", len(reqs), len(got), got[max(0, len(got)-200):])
	}
	if got := toolResultText(reqs[2], "c2"); !strings.Contains(got, "19999") || !strings.Contains(got, "20000") {
		t.Errorf("reading the spill file gave %q; want the end of the full output", got)
	}
	if matches, _ := filepath.Glob(filepath.Join(e.work, ".rein", "spill", "*")); len(matches) == 0 {
		t.Error("no spill file in the workspace's .rein/spill")
	}
}
