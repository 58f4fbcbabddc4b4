package main

import (
	"context"
	"fmt"
	"github.com/reinhq/rein/internal/testwait"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/tool/exec/exectest"
)

// startLongCommand starts rein on a turn whose shell command (and the
// child it starts) runs for minutes, and returns once both run.
func startLongCommand(t *testing.T, e *env, session, sandbox string) (wait func() error, pid int, marker string) {
	t.Helper()
	marker = fmt.Sprintf("300.%d", time.Now().UnixNano()%1_000_000)
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"sleep `+marker+` & sleep `+marker+`; echo never"}`),
		llmtest.Reply("not reached"),
	)
	srv := llmtest.NewServer(t, m)
	w := wires[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := e.cmd(ctx, w.env(), w.args(srv, e, "--approve", "auto", "--tools", "shell", "--sandbox", sandbox, "--new-session", session, "--json", "wait")...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testwait.For(30*time.Second, func() bool { return exectest.CountProcesses(marker) >= 2 }) {
		cmd.Process.Kill()
		t.Fatal("the shell command did not start within 30s")
	}
	return cmd.Wait, cmd.Process.Pid, marker
}

// goneWithin fails unless no process carrying marker is left by
// deadline (checked for the last time when the deadline's timer fires).
func goneWithin(t *testing.T, marker string, deadline time.Time) {
	t.Helper()
	if !testwait.For(time.Until(deadline), func() bool { return exectest.CountProcesses(marker) == 0 }) {
		t.Fatalf("%d processes of the command are still running", exectest.CountProcesses(marker))
	}
}

// TestHangupEndsTurnAndKillsCommand: SIGHUP during a long shell command
// ends the turn, recorded, and the command and its children are gone
// within 2 s.
func TestHangupEndsTurnAndKillsCommand(t *testing.T) {
	cases := []struct {
		sig     syscall.Signal
		sandbox string
	}{{syscall.SIGHUP, "auto"}, {syscall.SIGTERM, "auto"}, {syscall.SIGHUP, "landlock"}, {syscall.SIGHUP, "off"}}
	for _, c := range cases {
		sig := c.sig
		t.Run(sig.String()+"/"+c.sandbox, func(t *testing.T) {
			e := newEnv(t)
			wait, pid, marker := startLongCommand(t, e, "s-sig", c.sandbox)
			sent := time.Now()
			syscall.Kill(pid, sig)
			wait()
			exited := time.Since(sent)
			goneWithin(t, marker, sent.Add(2*time.Second))
			t.Logf("rein exited %s after the signal; its command was gone %s after it", exited.Round(time.Millisecond), time.Since(sent).Round(time.Millisecond))
			r := e.run(nil, "sessions", "export", "--store", e.store, "s-sig")
			if r.code != 0 {
				t.Fatalf("export: exit %d: %s", r.code, r.stderr)
			}
			last := lastLine(r.stdout)
			if !strings.Contains(last, `"type":"turn.end"`) || !strings.Contains(last, `"aborted"`) {
				t.Errorf("the log does not end with the aborted turn; last event: %s", last)
			}
		})
	}
}

// TestKilledReinLeavesNoCommand: SIGKILL gives rein no chance to clean
// up; the kernel ends its commands all the same.
func TestKilledReinLeavesNoCommand(t *testing.T) {
	e := newEnv(t)
	wait, pid, marker := startLongCommand(t, e, "s-kill", "auto")
	sent := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	wait()
	goneWithin(t, marker, sent.Add(2*time.Second))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// writeConfig writes the env's config file.
func (e *env) writeConfig(t *testing.T, text string) {
	t.Helper()
	dir := filepath.Join(e.home, "config", "rein")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
