package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// tmuxSession drives 'rein chat' in a real terminal: a tmux server of its
// own on a private socket.
type tmuxSession struct {
	t    *testing.T
	sock string
	home string
}

func startChat(t *testing.T, e *env, extraEnv []string, args ...string) *tmuxSession {
	t.Helper()
	return startTmux(t, e, extraEnv, append([]string{"chat"}, args...)...)
}

// startTmux runs rein with args in a tmux pane of 100x24.
func startTmux(t *testing.T, e *env, extraEnv []string, args ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (Debian: apt-get install tmux); the chat UI tests need a real terminal")
	}
	// A socket of its own for each start: a server being killed may
	// still hold the last one.
	sock := filepath.Join(e.home, "tmux.sock")
	for n := 2; fileExists(sock); n++ {
		sock = filepath.Join(e.home, fmt.Sprintf("tmux%d.sock", n))
	}
	s := &tmuxSession{t: t, sock: sock, home: e.home}
	var cmdline strings.Builder
	cmdline.WriteString("cd " + shellQuote(e.work) + " && env")
	for _, kv := range append(append([]string{}, e.vars...), extraEnv...) {
		if strings.HasPrefix(kv, "TERM=") {
			continue
		}
		cmdline.WriteString(" " + shellQuote(kv))
	}
	cmdline.WriteString(" " + shellQuote(reinBin))
	for _, a := range args {
		cmdline.WriteString(" " + shellQuote(a))
	}
	// Keep the pane after rein exits, with its exit code, for the test to read.
	cmdline.WriteString(`; echo "[exit $?]"; sleep 600`)
	s.tmux("new-session", "-d", "-x", "100", "-y", "24", "-s", "rein", cmdline.String())
	t.Cleanup(s.stop)
	return s
}

// stop ends the tmux server, and with it the rein in its pane, and checks
// that no rein process of the test is left running.
func (s *tmuxSession) stop() {
	exec.Command("tmux", "-S", s.sock, "kill-server").Run()
	if !testwait.For(10*time.Second, func() bool { return len(reinProcesses(s.home)) == 0 }) {
		s.t.Errorf("rein processes left running after the test: %v", reinProcesses(s.home))
	}
}

// reinProcesses lists the running rein processes whose HOME is home, read
// from /proc (none where there is no /proc).
func reinProcesses(home string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		if exe, err := os.Readlink(filepath.Join(d, "exe")); err != nil || exe != reinBin {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "HOME="+home) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys sends keys as tmux names them ("Enter", "Escape") or literal text.
func (s *tmuxSession) keys(keys ...string) {
	s.tmux(append([]string{"send-keys", "-t", "rein"}, keys...)...)
}

func (s *tmuxSession) typeText(text string) { s.tmux("send-keys", "-t", "rein", "-l", text) }

// prompt types text and sends it with Enter.
func (s *tmuxSession) prompt(text string) {
	s.typeText(text)
	s.keys("Enter")
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", "rein") }

// waitFor polls the screen until it contains every string of want.
func (s *tmuxSession) waitFor(want ...string) string {
	s.t.Helper()
	return s.waitScreen(fmt.Sprintf("showed %q", want), func(scr string) bool {
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false
			}
		}
		return true
	})
}

// waitScreen polls the screen until ok holds for it; what says what was
// awaited, for the failure.
func (s *tmuxSession) waitScreen(what string, ok func(screen string) bool) string {
	s.t.Helper()
	var scr string
	if !testwait.For(15*time.Second, func() bool { scr = s.screen(); return ok(scr) }) {
		s.t.Fatalf("the screen never %s:\n%s", what, scr)
	}
	return scr
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// idlePrompt is the start of the status line while no turn runs.
const idlePrompt = " ready · "

var (
	durationRE = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m)\b`)
)

// normalizeScreen removes what changes from run to run: durations,
// temporary paths and trailing blanks.
func normalizeScreen(scr string, e *env) string {
	scr = strings.ReplaceAll(scr, e.work, "$WORK")
	scr = durationRE.ReplaceAllString(scr, "<dur>")
	lines := strings.Split(scr, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "chat", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("screen %s (-want +got):\n%s", name, diff)
	}
}

func chatServer(t *testing.T, entries ...llmtest.Entry) (*llmtest.Model, *llmtest.Server) {
	m := llmtest.NewModel(entries...)
	return m, llmtest.NewServerWithOptions(t, m, &llmtest.ServerOptions{NoCache: true})
}

func chatArgs(srv *llmtest.Server, e *env, rest ...string) []string {
	return append([]string{"--model", wires[0].model, "--base-url", srv.URL, "--store", e.store, "--session", "chat1"}, rest...)
}

func TestChatAnswerStreams(t *testing.T) {
	e := newEnv(t)
	_, srv := chatServer(t, llmtest.Reply("# Greeting\n\nHello! Here is `code` and a list:\n- one\n- two"))
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.typeText("say hello")
	s.keys("Enter")
	scr := s.waitFor("• two", idlePrompt)
	checkGolden(t, "answer", normalizeScreen(scr, e))
	s.keys("C-c")
}

func TestChatApproval(t *testing.T) {
	e := newEnv(t)
	_, srv := chatServer(t,
		llmtest.CallTool("call_1", "write", `{"path":"greeting.txt","content":"hi\n"}`),
		llmtest.Reply("Wrote greeting.txt."),
	)
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.typeText("write a greeting")
	s.keys("Enter")
	scr := s.waitFor("[y]es")
	checkGolden(t, "approval-prompt", normalizeScreen(scr, e))
	s.keys("y")
	scr = s.waitFor("Wrote greeting.txt.", idlePrompt)
	checkGolden(t, "approval-done", normalizeScreen(scr, e))
	b, err := os.ReadFile(filepath.Join(e.work, "greeting.txt"))
	if err != nil || string(b) != "hi\n" {
		t.Errorf("greeting.txt = %q, %v", b, err)
	}
}

func TestChatEscCancels(t *testing.T) {
	e := newEnv(t)
	m, srv := chatServer(t,
		llmtest.HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "Working on it"}),
		llmtest.Reply("Still here."),
	)
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.typeText("a long job")
	s.keys("Enter")
	s.waitFor("Working on it")
	s.keys("Escape")
	scr := s.waitFor("turn cancelled", idlePrompt)
	checkGolden(t, "cancelled", normalizeScreen(scr, e))
	// The session goes on after a cancel.
	s.typeText("are you there?")
	s.keys("Enter")
	s.waitFor("Still here.", idlePrompt)
	if n := m.Calls(); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
	s.typeText("/compact")
	s.keys("Enter")
	s.waitFor("nothing to compact yet")
	s.keys("C-c")
}

func TestChatContinue(t *testing.T) {
	e := newEnv(t)
	m, srv := chatServer(t, llmtest.Reply("First."), llmtest.Reply("Second."))
	if r := e.run(wires[0].env(), wires[0].args(srv, e, "--new-session", "prev", "earlier question")...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	s := startChat(t, e, wires[0].env(), "--model", wires[0].model, "--base-url", srv.URL, "--store", e.store, "--continue")
	s.waitFor("resumed session prev")
	s.waitFor("earlier question")
	s.typeText("and now?")
	s.keys("Enter")
	s.waitFor("Second.")
	got := transcript(m.Requests()[1])
	if diff := cmp.Diff([]string{"user: earlier question", "assistant: First.", "user: and now?"}, got); diff != "" {
		t.Errorf("continued request (-want +got):\n%s", diff)
	}
}

func TestRunAsksAtTheTerminal(t *testing.T) {
	e := newEnv(t)
	_, srv := chatServer(t,
		llmtest.CallTool("call_1", "shell", `{"command":"echo approved > proof.txt"}`),
		llmtest.Reply("Ran it."),
	)
	s := startTmux(t, e, wires[0].env(), wires[0].args(srv, e, "run the command")...)
	s.waitFor("allow shell echo approved > proof.txt?")
	s.typeText("y")
	s.keys("Enter")
	s.waitFor("Ran it.", "[exit 0]")
	b, err := os.ReadFile(filepath.Join(e.work, "proof.txt"))
	if err != nil || string(b) != "approved\n" {
		t.Errorf("proof.txt = %q, %v", b, err)
	}
}

func TestChatSteer(t *testing.T) {
	e := newEnv(t)
	_, srv := chatServer(t,
		llmtest.CallTool("c1", "ls", `{"path":"."}`).WithDelay(time.Second),
		llmtest.Respond(func(req *llm.Request) llmtest.Entry {
			if strings.Contains(strings.Join(transcript(req), "\n"), "mind the docs") {
				return llmtest.Reply("Heard the steer.")
			}
			return llmtest.Reply("No steer arrived.")
		}),
	)
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.typeText("look around")
	s.keys("Enter")
	s.waitFor("working (Esc cancels)")
	s.typeText("mind the docs")
	s.keys("Enter")
	s.waitFor("steer queued: mind the docs")
	s.waitFor("Heard the steer.", idlePrompt)
}
