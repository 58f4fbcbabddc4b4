// Package exectest is the conformance suite for execution contexts:
// Run checks that a tool/exec Context keeps the package's contract
// (environment, working directory, output, exit codes, process groups,
// Close) and, when it says it is confined, its confinement (writes,
// reads, /proc, signals and network).
package exectest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/tool/exec"
)

// Options configure Run.
type Options struct {
	// New returns a fresh context whose workspace is ws. Required.
	New func(t *testing.T, ws string) exec.Context
	// Network is the policy the context was made with: when false, a
	// confined context must not reach a listener on the loopback address.
	Network bool
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, o *Options) {
	t.Helper()
	t.Setenv("EXECTEST_INHERITED", "from rein")
	newCtx := func(t *testing.T) (exec.Context, string) {
		ws := t.TempDir()
		c := o.New(t, ws)
		t.Cleanup(func() { c.Close() })
		real, err := filepath.EvalSymlinks(ws)
		if err != nil {
			t.Fatal(err)
		}
		return c, real
	}
	t.Run("Environment", func(t *testing.T) {
		c, ws := newCtx(t)
		env := []string{"PATH=/usr/bin:/bin", "EXECTEST_GIVEN=1"}
		out, _, code := run(t, c, ws, env, "env")
		if code != 0 {
			t.Fatalf("env exited %d: %s", code, out)
		}
		got := strings.Split(strings.TrimSpace(out), "\n")
		want := append(slices.Clone(env), "PWD="+ws)
		if c.Info().Confined {
			want = append(want, "TMPDIR="+valueOf(got, "TMPDIR"), "HOME="+valueOf(got, "HOME"))
			if valueOf(got, "TMPDIR") == "" {
				t.Errorf("a confined context must set TMPDIR; got %q", got)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("environment = %q, want exactly %q", got, want)
		}
	})
	t.Run("DirAndOutput", func(t *testing.T) {
		c, ws := newCtx(t)
		sub := filepath.Join(ws, "sub")
		os.Mkdir(sub, 0o755)
		var stdout, stderr bytes.Buffer
		p, err := c.Start(context.Background(), &exec.StartRequest{
			Argv: []string{"/bin/sh", "-c", "pwd; read x; echo \"in:$x\"; echo oops >&2; exit 3"},
			Dir:  sub, Env: []string{"PATH=/usr/bin:/bin"},
			Stdin: strings.NewReader("hello\n"), Stdout: &stdout, Stderr: &stderr,
		})
		if err != nil {
			t.Fatal(err)
		}
		code, werr := p.Wait()
		if code != 3 || werr == nil {
			t.Errorf("Wait = %d, %v; want 3 and an error", code, werr)
		}
		if got, want := stdout.String(), sub+"\nin:hello\n"; got != want {
			t.Errorf("stdout = %q, want %q", got, want)
		}
		if stderr.String() != "oops\n" {
			t.Errorf("stderr = %q, want %q", stderr.String(), "oops\n")
		}
		waitGone(t, p) // an ended command leaves nothing behind, not even a zombie
	})
	t.Run("BadRequest", func(t *testing.T) {
		c, ws := newCtx(t)
		for _, req := range []*exec.StartRequest{nil, {Dir: ws}, {Argv: []string{"true"}}} {
			if _, err := c.Start(context.Background(), req); err == nil {
				t.Errorf("Start(%+v) = nil error", req)
			}
		}
	})
	t.Run("EndedAloneIsNotAlive", func(t *testing.T) {
		// A command that started nothing else is not alive once it has
		// ended: the shell reports processes left running by this.
		c, ws := newCtx(t)
		for range 5 {
			p := start(t, c, ws, "true")
			<-p.Done()
			if p.Alive() {
				t.Fatal("Alive() = true right after a command that left nothing running ended")
			}
		}
	})
	t.Run("GroupSignal", func(t *testing.T) {
		c, ws := newCtx(t)
		p := start(t, c, ws, "sleep 30 & sleep 30 & wait")
		if !p.Alive() {
			t.Fatal("group not alive after start")
		}
		if err := p.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitGone(t, p)
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("Signal after the end = %v, want nil", err)
		}
	})
	t.Run("TermEndsPromptly", func(t *testing.T) {
		// SIGTERM must reach the command itself, not stop at a launcher
		// that ignores it (or leaves it ignored in the command).
		// (A signal sent before the command runs may reach only the
		// namespace's init, which drops it; killers escalate to SIGKILL.)
		c, ws := newCtx(t)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sh", "-c", "sleep 30 & echo running; sleep 30"},
			Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: w})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := r.Read(make([]byte, 8)); n == 0 {
			t.Fatal("the command did not start")
		}
		p.Signal(syscall.SIGTERM)
		select {
		case <-p.Done():
		case <-time.After(time.Second):
			p.Signal(syscall.SIGKILL)
			t.Fatal("the command was still running 1s after SIGTERM")
		}
	})
	t.Run("CloseKills", func(t *testing.T) {
		c, ws := newCtx(t)
		p := start(t, c, ws, "sleep 30 & sleep 30")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Done():
		default:
			t.Fatal("Close returned before the process ended")
		}
		waitGone(t, p)
		if _, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/true"}, Dir: ws}); !errors.Is(err, exec.ErrClosed) {
			t.Errorf("Start after Close = %v, want ErrClosed", err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
	})
	t.Run("Confinement", func(t *testing.T) {
		c, ws := newCtx(t)
		if !c.Info().Confined {
			t.Skipf("%s is not confined", c.Info().Name)
		}
		confinement(t, c, ws, o.Network)
	})
}

func valueOf(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

func start(t *testing.T, c exec.Context, ws, script string) exec.Process {
	t.Helper()
	p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a shell script to its end and returns its output.
func run(t *testing.T, c exec.Context, ws string, env []string, script string) (stdout, stderr string, code int) {
	t.Helper()
	_, stdout, stderr, code = Script(t, c, ws, env, script)
	return stdout, stderr, code
}

// Script runs a shell script in c, in the directory ws with env (nil: a
// PATH of /usr/bin and /bin), waits for its end (failing t after 20s),
// and returns its process, its output and its exit code.
func Script(t *testing.T, c exec.Context, ws string, env []string, script string) (p exec.Process, stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	if env == nil {
		env = []string{"PATH=/usr/bin:/bin"}
	}
	p, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: ws, Env: env, Stdout: &o, Stderr: &e})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Signal(syscall.SIGKILL)
		t.Fatalf("%q did not end within 20s", script)
	}
	code, _ = p.Wait()
	return p, o.String(), e.String(), code
}

// waitGone waits (bounded) until no process of p's group is left.
func waitGone(t *testing.T, p exec.Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the leader did not end within 5s")
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("processes of the group are still running 5s after the leader ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func confinement(t *testing.T, c exec.Context, ws string, network bool) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("outside-content"), 0o644)
	home, _ := os.UserHomeDir()
	checks := []struct{ name, script string }{
		{"write outside", fmt.Sprintf("echo x > %s/new", outside)},
		{"delete outside", "rm " + secret},
		{"read outside", "cat " + secret},
		{"list home", "ls -A " + home + " | head -1 | grep ."},
		{"read rein's environment", fmt.Sprintf("cat /proc/%d/environ", os.Getpid())},
		{"signal rein", fmt.Sprintf("kill -0 %d", os.Getpid())},
		{"write system dirs", "echo x > /etc/exectest-probe"},
	}
	for _, ch := range checks {
		if out, errOut, code := run(t, c, ws, nil, ch.script); code == 0 || strings.Contains(out, "outside-content") {
			t.Errorf("%s: %q succeeded (exit %d): %s%s", ch.name, ch.script, code, out, errOut)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "outside-content" {
		t.Errorf("the file outside the workspace was changed: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a file was created outside the workspace")
	}
	if _, err := os.Stat("/etc/exectest-probe"); err == nil {
		os.Remove("/etc/exectest-probe")
		t.Error("a file was created in /etc")
	}
	out, errOut, code := run(t, c, ws, nil, `echo in > inside && echo tmp > "$TMPDIR/t" && cat inside "$TMPDIR/t" && cat /etc/hostname >/dev/null`)
	if code != 0 || out != "in\ntmp\n" {
		t.Errorf("writes in the workspace and TMPDIR, reads of /etc: exit %d, %q %q", code, out, errOut)
	}
	out, _, _ = run(t, c, ws, nil, `ls /proc | grep -c '^[0-9]'`)
	if n := strings.TrimSpace(out); n == "" || len(n) > 1 {
		t.Errorf("the context sees %s processes in /proc; a fresh PID namespace shows only its own", n)
	}
	if network {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if _, _, code := run(t, c, ws, nil, fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", port)); code == 0 {
		t.Error("a TCP connection to the loopback address succeeded without network")
	}
	// A connection that was made is in the backlog by now.
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if conn, err := ln.Accept(); err == nil {
		conn.Close()
		t.Error("the listener outside accepted a connection from the context")
	}
}
