//go:build linux

package exec_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/exec/exectest"
)

// sandboxes are the confined contexts this machine offers, by name.
func sandboxes(t *testing.T, o exec.SandboxOptions) map[string]exec.Context {
	t.Helper()
	out := map[string]exec.Context{}
	for name, make := range map[string]func(*exec.SandboxOptions) (exec.Context, error){
		"bubblewrap": func(o *exec.SandboxOptions) (exec.Context, error) { return exec.NewBubblewrap(o) },
		"landlock":   func(o *exec.SandboxOptions) (exec.Context, error) { return exec.NewLandlock(o) },
	} {
		o := o
		c, err := make(&o)
		if err != nil {
			t.Logf("%s not usable here: %v", name, err)
			continue
		}
		t.Cleanup(func() { c.Close() })
		out[name] = c
	}
	if len(out) == 0 {
		t.Skip("no sandbox on this machine")
	}
	return out
}

// TestSandboxCommandsApart runs a command while another runs: it
// starts at once, and neither sees the other's processes.
func TestSandboxCommandsApart(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			marker := fmt.Sprintf("71.%d%d", os.Getpid(), time.Now().UnixNano()%1000)
			long := startUp(t, c, ws, "exec sleep "+marker)
			defer long.Signal(os.Kill)
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, err := c.Start(ctx, &exec.StartRequest{Argv: []string{"/bin/sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"},
				Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the second command did not end while the first ran")
			}
			if strings.Contains(out.String(), marker) {
				t.Errorf("the second command sees the first: %s", out.String())
			}
			if !long.Alive() {
				t.Error("the first command ended early")
			}
		})
	}
}

// TestSandboxEscapeeEndsWithCommand starts a process that leaves the
// command's session and group; it ends when the command does, not when
// the context is closed.
func TestSandboxEscapeeEndsWithCommand(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			marker := fmt.Sprintf("72.%d%d", os.Getpid(), time.Now().UnixNano()%1000)
			p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sh", "-c", "setsid sleep " + marker + " & sleep 0.2"},
				Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}})
			if err != nil {
				t.Fatal(err)
			}
			if !testwait.For(5*time.Second, func() bool { return exectest.CountProcesses(marker) > 0 }) {
				if code, err := p.Wait(); code != 0 {
					t.Fatalf("the command failed: %d %v", code, err)
				}
			}
			p.Wait()
			if !testwait.For(2*time.Second, func() bool { return exectest.CountProcesses(marker) == 0 }) {
				t.Errorf("%d processes outlived their command by 2s", exectest.CountProcesses(marker))
			}
		})
	}
}

// TestSandboxPerCommand runs the suite on the contexts as they are
// where their spawner cannot run: a sandbox set up for every command.
func TestSandboxPerCommand(t *testing.T) {
	defer exec.PerCommandForTest()()
	t.Run("bubblewrap", func(t *testing.T) {
		runSuite(t, func(ws string) (exec.Context, error) { return exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws}) })
	})
	t.Run("landlock", func(t *testing.T) {
		runSuite(t, func(ws string) (exec.Context, error) { return exec.NewLandlock(&exec.SandboxOptions{Workspace: ws}) })
	})
}
