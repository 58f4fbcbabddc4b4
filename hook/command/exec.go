package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	toolexec "github.com/reinhq/rein/tool/exec"
)

// DefaultMaxOutput is how many bytes of a command's stdout and of its
// stderr are kept when Options.MaxOutput is zero.
const DefaultMaxOutput = 64 << 10

// outcome is what one command run produced.
type outcome struct {
	exit     int // -1 when the process did not exit by itself
	stdout   string
	stderr   string
	dur      time.Duration
	timedOut bool
	err      error // could not start, timed out, or was cancelled
}

// boundedBuffer keeps the first max bytes written and counts the rest, so
// a chatty hook cannot exhaust memory.
type boundedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room >= len(p) {
		b.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	if b.dropped == 0 {
		return b.buf.String()
	}
	return b.buf.String() + "\n[… " + itoa(b.dropped) + " more bytes cut]"
}

// run starts command with sh -c in dir, writes input to its stdin and
// waits at most timeout. The process runs in its own process group, which
// is killed on timeout or cancellation, so a hook's children go too.
// extra is added to the commands' environment for this run.
func (r *Runner) run(parent context.Context, command string, timeout time.Duration, input []byte, extra []string) outcome {
	if timeout <= 0 {
		timeout = r.opts.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.opts.Shell, "-c", command)
	cmd.Dir = r.opts.Dir
	cmd.Env = r.env
	if len(extra) > 0 {
		cmd.Env = append(slices.Clip(r.env), extra...)
	}
	cmd.Stdin = bytes.NewReader(input)
	stdout := &boundedBuffer{max: r.opts.MaxOutput}
	stderr := &boundedBuffer{max: r.opts.MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	setGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	// Pipes held open by a background grandchild must not hang the hook.
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	o := outcome{dur: time.Since(start), exit: -1}
	o.stdout, o.stderr = r.redact(stdout.String()), r.redact(stderr.String())
	exited := cmd.ProcessState != nil && cmd.ProcessState.Exited()
	if exited {
		o.exit = cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	switch {
	case exited:
		// The process ended by itself; a late deadline does not matter.
	case parent.Err() != nil:
		o.err = context.Cause(parent)
	case ctx.Err() != nil:
		o.timedOut = true
		o.err = &TimeoutError{Command: command, Timeout: timeout}
	case err != nil && !errors.As(err, &ee):
		o.err = fmt.Errorf("run hook command %s with %s: %w; check that the shell exists and the workspace directory is readable", quote(command), r.opts.Shell, err)
	case err != nil:
		o.err = errors.New("hook command " + quote(command) + " was killed by a signal (" + ee.ProcessState.String() + ")")
	}
	return o
}

// TimeoutError is a hook command that ran past its timeout. The boundary
// it guarded fails closed.
type TimeoutError struct {
	Command string
	Timeout time.Duration
}

// Error says which command timed out and how to fix it.
func (e *TimeoutError) Error() string {
	return "hook command " + quote(e.Command) + " timed out after " + e.Timeout.String() +
		" and was killed; make it faster or raise its \"timeout\" (seconds) in the settings"
}

// redact replaces the values of rein's secret environment variables.
func (r *Runner) redact(s string) string {
	for _, v := range r.secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// buildEnv is the hooks' environment: rein's own minus secrets (unless
// named in pass), plus extra and the project directory variables.
func buildEnv(base []string, pass []string, extra []string, dir string) (env, secrets []string) {
	for _, kv := range base {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if toolexec.CredentialName(name) && !containsFold(pass, name) {
			if len(val) >= 8 {
				secrets = append(secrets, val)
			}
			continue
		}
		env = append(env, kv)
	}
	env = append(env, extra...)
	if dir != "" {
		env = append(env, "REIN_PROJECT_DIR="+dir, "CLAUDE_PROJECT_DIR="+dir)
	}
	return env, secrets
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func environ() []string { return os.Environ() }

func quote(s string) string {
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return "\"" + s + "\""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
