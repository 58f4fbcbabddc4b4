//go:build linux

package exec_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/exec/exectest"
)

// script runs a shell script in c to its end, with /usr/sbin and /sbin
// on its PATH, and returns its process, output and exit code.
func script(t *testing.T, c exec.Context, ws, s string) (exec.Process, string, int) {
	t.Helper()
	p, stdout, stderr, code := exectest.Script(t, c, ws, []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}, s)
	return p, stdout + stderr, code
}

// startUp starts a script that says "up" once it runs, and returns when
// it has.
func startUp(t *testing.T, c exec.Context, ws, s string) exec.Process {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sh", "-c", "echo up; " + s},
		Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.Read(make([]byte, 3)); n == 0 {
		t.Fatal("the command did not start")
	}
	return p
}

// TestSandboxInitReused runs commands one after another: an init whose
// command left nothing behind runs the next one; one whose command left
// a process running, or that was killed, does not.
func TestSandboxInitReused(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			first, _, _ := script(t, c, ws, "true")
			second, out, code := script(t, c, ws, "echo $$")
			if code != 0 || first.Pid() != second.Pid() {
				t.Fatalf("two commands that left nothing behind ran in inits %d and %d (exit %d: %s); want one init", first.Pid(), second.Pid(), code, out)
			}
			marker := fmt.Sprintf("73.%d%d", os.Getpid(), time.Now().UnixNano()%1000)
			lingered, _, _ := script(t, c, ws, "setsid sleep "+marker+" &")
			if lingered.Pid() != second.Pid() {
				t.Fatalf("the third command ran in init %d, not the idle %d", lingered.Pid(), second.Pid())
			}
			after, _, _ := script(t, c, ws, "true")
			if after.Pid() == lingered.Pid() {
				t.Error("the init of a command that left a process running ran the next command")
			}
			if !testwait.For(2*time.Second, func() bool { return exectest.CountProcesses(marker) == 0 }) {
				t.Error("the process the command left outlived its init by 2s")
			}
			killed := startUp(t, c, ws, "exec sleep 30")
			if killed.Pid() != after.Pid() {
				t.Fatalf("the command ran in init %d, not the idle %d", killed.Pid(), after.Pid())
			}
			killed.Signal(syscall.SIGKILL)
			killed.Wait()
			if next, _, _ := script(t, c, ws, "true"); next.Pid() == killed.Pid() {
				t.Error("a killed init ran the next command")
			}
		})
	}
}

// TestSandboxInitLateSignal signals a command after it ended, while its
// init runs the next one: the signals reach no one.
func TestSandboxInitLateSignal(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			ended, _, _ := script(t, c, ws, "true")
			next := startUp(t, c, ws, "exec sleep 30")
			if next.Pid() != ended.Pid() {
				t.Fatalf("the next command ran in init %d, not the idle %d", next.Pid(), ended.Pid())
			}
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
				if err := ended.Signal(sig); err != nil {
					t.Errorf("signal %v to an ended command = %v, want nil", sig, err)
				}
			}
			// The init passes signals on in the order they were sent, and
			// a process ends by the first fatal one: SIGTERM would say 143,
			// SIGKILL of the init -1.
			next.Signal(syscall.SIGHUP)
			if code, err := next.Wait(); code != 128+int(syscall.SIGHUP) {
				t.Errorf("the next command ended with %d (%v), want %d: the signals for the ended one reached it", code, err, 128+int(syscall.SIGHUP))
			}
			// Signals racing a command's end never reach the command after,
			// and an init a SIGKILL reached is not handed another.
			for i := range 10 {
				sig := []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}[i%2]
				p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/true"}, Dir: ws})
				if err != nil {
					t.Fatal(err)
				}
				sent := make(chan struct{})
				go func() {
					defer close(sent)
					p.Signal(sig)
				}()
				p.Wait()
				if _, out, code := script(t, c, ws, "sleep 0.01; echo ok"); code != 0 || out != "ok\n" {
					t.Fatalf("a command after one signalled as it ended: exit %d, %q", code, out)
				}
				<-sent
			}
		})
	}
}

// TestSandboxInitUntouchable has commands try to change what the next
// command in their init would inherit: the mounts, the init's nice
// value, its descriptors.
func TestSandboxInitUntouchable(t *testing.T) {
	ws := t.TempDir()
	os.Mkdir(ws+"/m", 0o755)
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			_, before, _ := script(t, c, ws, "cat /proc/self/mountinfo")
			if _, out, code := script(t, c, ws, "mount -t tmpfs none "+ws+"/m || umount /proc"); code == 0 {
				t.Errorf("a command changed its init's mounts: %s", out)
			}
			if _, after, _ := script(t, c, ws, "cat /proc/self/mountinfo"); after != before {
				t.Errorf("the next command's mounts differ:\n%s\nwant\n%s", after, before)
			}
			// The checks pidfd_getfd and ptrace also pass: the init's
			// descriptors, its root.
			if _, out, code := script(t, c, ws, "readlink /proc/1/fd/0 || ls /proc/1/root/"); code == 0 {
				t.Errorf("a command reaches into its init: %s", out)
			}
			// Nice values and policies are per thread: every thread of the
			// init is changed. An init with more capabilities than its
			// command refuses; one that allowed it runs no further command.
			for _, ch := range []struct{ change, read, want string }{
				{"renice -n 5 -p $(ls /proc/1/task)", "cut -d' ' -f19 /proc/self/stat", "0"},
				{"chrt -a -i -p 0 1", "cut -d' ' -f41 /proc/self/stat", "0"},
				{"echo 500 > /proc/1/oom_score_adj", "cat /proc/self/oom_score_adj", "0"},
			} {
				changed, _, code := script(t, c, ws, ch.change)
				next, out, _ := script(t, c, ws, ch.read)
				if (code == 0 && next.Pid() == changed.Pid()) || strings.TrimSpace(out) != ch.want {
					t.Errorf("after %q (exit %d), the next command ran in the same init (%v) and read %q, want %q",
						ch.change, code, next.Pid() == changed.Pid(), out, ch.want)
				}
			}
		})
	}
}

// TestSandboxInitClose closes a context with an idle init: no process
// of it is left.
func TestSandboxInitClose(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			p, _, _ := script(t, c, ws, "true")
			if syscall.Kill(p.Pid(), 0) != nil {
				t.Fatalf("the init %d is not idle after its command", p.Pid())
			}
			c.Close()
			if !testwait.For(2*time.Second, func() bool { return syscall.Kill(p.Pid(), 0) == syscall.ESRCH }) {
				t.Errorf("the idle init %d outlived Close by 2s", p.Pid())
			}
		})
	}
}

// TestSandboxInitEarlySignal signals a command as soon as Start returns:
// the init passes the signal on once the command runs, in a fresh init
// as in one that ran a command before.
func TestSandboxInitEarlySignal(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			for range 5 {
				p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sleep", "30"}, Dir: ws})
				if err != nil {
					t.Fatal(err)
				}
				p.Signal(syscall.SIGTERM)
				select {
				case <-p.Done():
				case <-time.After(5 * time.Second):
					p.Signal(syscall.SIGKILL)
					t.Fatal("a command signalled right after its start still ran 5s later")
				}
				if code, _ := p.Wait(); code != 128+int(syscall.SIGTERM) {
					t.Fatalf("exit %d, want %d", code, 128+int(syscall.SIGTERM))
				}
			}
		})
	}
}

// TestSandboxInitKilledWhileIdle kills an idle init from outside: the
// next command runs in another.
func TestSandboxInitKilledWhileIdle(t *testing.T) {
	ws := t.TempDir()
	for name, c := range sandboxes(t, exec.SandboxOptions{Workspace: ws}) {
		t.Run(name, func(t *testing.T) {
			idle, _, _ := script(t, c, ws, "true")
			if err := syscall.Kill(idle.Pid(), syscall.SIGKILL); err != nil {
				t.Fatalf("kill the idle init: %v", err)
			}
			if !testwait.For(2*time.Second, func() bool { return syscall.Kill(idle.Pid(), 0) == syscall.ESRCH }) {
				t.Fatal("the killed init was still there 2s later")
			}
			next, out, code := script(t, c, ws, "echo ok")
			if code != 0 || out != "ok\n" || next.Pid() == idle.Pid() {
				t.Errorf("after the idle init was killed: exit %d, %q, in init %d (the killed one: %d)", code, out, next.Pid(), idle.Pid())
			}
		})
	}
}
