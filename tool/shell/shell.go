package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/sandbox"
)

// Options configure a Shell. A nil *Options and zero fields mean the
// documented defaults.
type Options struct {
	// Policy is the workspace: commands run in Policy.Root and are checked
	// against Policy.Commands first. Required: without it every command
	// is refused.
	Policy *sandbox.Policy
	// Shell is the interpreter, run as "<Shell> -c <command>" (default
	// bash, or sh when bash is not installed).
	Shell string
	// Timeout is a command's time limit when the call gives none
	// (default 2 minutes).
	Timeout time.Duration
	// MaxTimeout caps the time limit a call may ask for (default 10 minutes).
	MaxTimeout time.Duration
	// KillGrace is how long a process group has between SIGTERM and
	// SIGKILL (default 2 seconds).
	KillGrace time.Duration
	// OutputLimit is how many bytes of output the model sees (default
	// 30 000): beyond it, the head and tail with a marker between them,
	// and the whole output in a spill file.
	OutputLimit int
	// SpillDir holds spilled outputs and background task logs (default
	// <root>/.rein/spill).
	SpillDir string
	// Env lists the names (or path.Match patterns such as "LC_*") of
	// rein's environment variables passed to commands; nil means
	// exec.DefaultEnv. Nothing else is inherited, a name that looks like a
	// credential (KEY, TOKEN, SECRET, PASSWORD, …) passes only when listed
	// by its exact name, and no variable whose value holds one of Secrets
	// passes at all. Commands also get PAGER=cat, GIT_PAGER=cat and
	// GIT_TERMINAL_PROMPT=0 so they never wait for a person.
	Env []string
	// Secrets are values no command may see in its environment: the
	// provider keys, auth headers and MCP credentials the host holds.
	Secrets []string
	// Exec is where commands run. Nil means a sandbox for the workspace
	// (exec.NewSandbox), made by New and closed by Close, or, where the
	// machine offers none, commands run unconfined and Confinement says
	// so. A Context given here is the caller's to close.
	Exec exec.Context
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
}

// TaskExit reports a background task that ended.
type TaskExit struct {
	ID       string
	Command  string
	ExitCode int           // -1 when killed by a signal
	Reason   string        // "exited", "killed", "timeout" or "closed"
	Duration time.Duration // from start to end
	LogPath  string        // the task's full output
}

// String describes the exit for the model.
func (e TaskExit) String() string {
	what := fmt.Sprintf("exited with code %d", e.ExitCode)
	switch e.Reason {
	case "killed":
		what = "was killed"
	case "timeout":
		what = "hit its time limit and was killed"
	case "closed":
		what = "was stopped because the shell closed"
	}
	return fmt.Sprintf("Background task %s (%s) %s after %s; its output is in %s.", e.ID, e.Command, what, e.Duration.Round(time.Millisecond), e.LogPath)
}

// Shell runs commands for a model in one workspace, in the foreground or
// as background tasks. It is safe for concurrent use; Close stops every
// task.
type Shell struct {
	o      Options
	root   string
	shell  string
	log    *slog.Logger
	exec   exec.Context
	owned  bool  // exec was made by New
	noBox  error // why no sandbox could be made, when exec is unconfined
	nextID atomic.Int64
	// envFile is the file BASH_ENV names for commands; see SourceEnv.
	envFile atomic.Pointer[string]

	mu      sync.Mutex
	tasks   map[string]*task
	fg      map[chan struct{}]struct{} // closed to stop each running foreground command (not keyed by pid: commands a sandbox runs one after another share one)
	order   []string
	exits   []TaskExit
	closed  bool
	wg      sync.WaitGroup
	closeMu sync.Mutex
}

// New returns a Shell. Check the workspace with the first call: a missing
// Policy or root makes every command fail with a message saying so.
func New(opts *Options) *Shell {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = 10 * time.Minute
	}
	if o.Timeout > o.MaxTimeout {
		o.Timeout = o.MaxTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 2 * time.Second
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = 30_000
	}
	s := &Shell{o: o, tasks: make(map[string]*task), fg: make(map[chan struct{}]struct{}), log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.shell = o.Shell
	if s.shell == "" {
		s.shell = "sh"
		if p, err := osexec.LookPath("bash"); err == nil {
			s.shell = p
		}
	}
	if o.Policy != nil {
		if root, err := o.Policy.RootDir(); err == nil {
			s.root = root
			if s.o.SpillDir == "" {
				s.o.SpillDir = filepath.Join(root, ".rein", "spill")
			}
		}
	}
	s.exec = o.Exec
	if s.exec == nil && s.root != "" {
		s.owned = true
		if s.exec, s.noBox = exec.NewSandbox(&exec.SandboxOptions{Workspace: s.root}); s.noBox != nil {
			s.log.Warn("no sandbox for the shell; commands run unconfined", "err", s.noBox)
			s.exec = exec.NewUnconfined()
		}
	}
	return s
}

// Confinement describes where commands run and, when they run
// unconfined because no sandbox could be made, why.
func (s *Shell) Confinement() (exec.Info, error) {
	if s.exec == nil {
		return exec.Info{}, errors.New("shell: no workspace, so no execution context")
	}
	return s.exec.Info(), s.noBox
}

// Tools returns the tools shell, task_output, task_kill and task_wait.
func (s *Shell) Tools() []tool.Tool {
	return []tool.Tool{
		&tool.Func{ToolSpec: shellSpec(), Fn: s.callShell, SubjectFn: tool.CommandSubject},
		&tool.Func{ToolSpec: taskOutputSpec(), Fn: s.callTaskOutput},
		&tool.Func{ToolSpec: taskKillSpec(), Fn: s.callTaskKill},
		&tool.Func{ToolSpec: taskWaitSpec(), Fn: s.callTaskWait},
	}
}

// Drain returns the background tasks that ended since the last Drain and
// whose end the model has not yet seen through task_output or task_wait.
// The loop tells the model about them at its next step.
func (s *Shell) Drain() []TaskExit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.exits
	s.exits = nil
	return out
}

// Close kills every running background task and foreground command with
// its process group, waits for them, and refuses further commands. The killed tasks are
// reported by Drain. Close is idempotent.
func (s *Shell) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	s.closed = true
	for stop := range s.fg {
		close(stop)
		delete(s.fg, stop)
	}
	var running []*task
	for _, id := range s.order {
		if t := s.tasks[id]; !t.isDone() {
			running = append(running, t)
		}
	}
	s.mu.Unlock()
	for _, t := range running {
		t.stop("closed", s.o.KillGrace)
	}
	s.wg.Wait()
	if s.owned && s.exec != nil {
		return s.exec.Close()
	}
	return nil
}

// env builds the child's environment.
func (s *Shell) env() []string {
	extra := []string{"PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0"}
	if p := s.envFile.Load(); p != nil && *p != "" {
		extra = append(extra, readEnvFile(*p)...)
	}
	return exec.Environ(s.o.Env, s.o.Secrets, extra)
}

// readEnvFile returns the NAME=value assignments of a file of shell
// lines ("export NAME=value", "NAME='value'"); other lines are left out.
// rein reads it, not the command: the file lies outside what a
// sandboxed command may read.
func readEnvFile(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		name, value, ok := strings.Cut(line, "=")
		if !ok || !validEnvName(name) {
			continue
		}
		if n := len(value); n >= 2 && (value[0] == '"' || value[0] == '\'') && value[n-1] == value[0] {
			value = value[1 : n-1]
		}
		out = append(out, name+"="+value)
	}
	return out
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// SourceEnv names a file of shell lines (such as "export NAME=value")
// whose assignments every later command gets in its environment: how the
// variables a session-start hook writes reach the commands. Empty stops
// it. It is safe to call while commands run.
func (s *Shell) SourceEnv(path string) { s.envFile.Store(&path) }

// display shows a path relative to the workspace when it is inside it.
func (s *Shell) display(p string) string {
	if s.root != "" {
		if rel, err := filepath.Rel(s.root, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return p
}

func (s *Shell) spillFile(prefix string) (*os.File, string, error) {
	if err := os.MkdirAll(s.o.SpillDir, 0o700); err != nil {
		return nil, "", err
	}
	f, err := os.CreateTemp(s.o.SpillDir, prefix+"-*.log")
	if err != nil {
		return nil, "", err
	}
	return f, f.Name(), nil
}

// start launches a command through the execution context, in its own
// process group, with its output (stdout and stderr interleaved) on one
// pipe.
func (s *Shell) start(command string) (exec.Process, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	p, err := s.exec.Start(context.Background(), &exec.StartRequest{
		Argv: []string{s.shell, "-c", command}, Dir: s.root, Env: s.env(), Stdout: w, Stderr: w,
	})
	w.Close()
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return p, r, nil
}

// checkReady says why commands cannot run, or nil.
func (s *Shell) checkReady(command string) *tool.Result {
	if s.o.Policy == nil || s.root == "" {
		return tool.Errorf("the shell has no workspace (its policy has no usable root); commands cannot run")
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return tool.Errorf("the shell is closed; commands cannot run")
	}
	if strings.TrimSpace(command) == "" {
		return tool.Errorf("command is required")
	}
	if err := s.o.Policy.Commands.Check(command); err != nil {
		var ce *sandbox.CommandError
		if errors.As(err, &ce) {
			return tool.Errorf("%s", ce.Reason)
		}
		return tool.Errorf("%v", err)
	}
	return nil
}

type shellArgs struct {
	Command     string  `json:"command"`
	Timeout     float64 `json:"timeout"`
	Background  bool    `json:"run_in_background"`
	Description string  `json:"description"`
}

func shellSpec() tool.Spec {
	return tool.Spec{
		Name: "shell",
		Description: "Run a shell command (bash -c) in the workspace root and return its output (stdout and stderr interleaved) and exit code. " +
			"Long output keeps its head and tail; the full output is saved to a file you can read. Commands time out after 2 minutes unless " +
			"timeout (seconds, at most 600) says otherwise. Set run_in_background for servers and long jobs: you get a task id at once; " +
			"follow it with task_output, task_wait and task_kill. Processes a foreground command leaves running are stopped when it ends.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"the command line"},` +
			`"timeout":{"type":"number","exclusiveMinimum":0,"description":"time limit in seconds (default 120, at most 600)"},` +
			`"run_in_background":{"type":"boolean","description":"start the command as a background task and return its id at once"},` +
			`"description":{"type":"string","description":"a few words on what the command does, for the person watching"}},` +
			`"required":["command"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{Destructive: true, OpenWorld: true},
	}
}

func (s *Shell) limit(seconds float64) time.Duration {
	d := s.o.Timeout
	if seconds > 0 {
		d = time.Duration(seconds * float64(time.Second))
	}
	return min(d, s.o.MaxTimeout)
}

func (s *Shell) callShell(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a shellArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	if r := s.checkReady(a.Command); r != nil {
		return r, nil
	}
	if call.Progress != nil && a.Description != "" {
		call.Progress(tool.Progress{Message: a.Description})
	}
	if a.Background {
		return s.startTask(a.Command, s.limit(a.Timeout))
	}
	return s.run(ctx, a.Command, s.limit(a.Timeout))
}

// run runs a foreground command to its end, its time limit, or ctx's end.
func (s *Shell) run(ctx context.Context, command string, limit time.Duration) (*tool.Result, error) {
	began := time.Now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return tool.Errorf("the shell is closed; commands cannot run"), nil
	}
	proc, out, err := s.start(command)
	if err != nil {
		s.mu.Unlock()
		return tool.Errorf("could not start %s: %v", s.shell, err), nil
	}
	stopped := make(chan struct{}) // closed by Close to stop this command
	s.fg[stopped] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.fg, stopped)
		s.mu.Unlock()
		s.wg.Done()
	}()
	c := &capture{limit: s.o.OutputLimit, openSpill: func() (*os.File, string, error) { return s.spillFile("shell") }}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		io.Copy(c, out)
	}()
	exited := proc.Done()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	reason := ""
	select {
	case <-exited:
	case <-timer.C:
		reason = "timeout"
		killGroup(proc, s.o.KillGrace, exited)
		<-exited
	case <-ctx.Done():
		reason = "cancelled"
		killGroup(proc, s.o.KillGrace, exited)
		<-exited
	case <-stopped:
		reason = "closed"
		killGroup(proc, s.o.KillGrace, exited)
		<-exited
	}
	// The leader is gone. Whatever it left running in its group is
	// stopped, so nothing outlives the call or holds the output open.
	lingered := false
	if reason == "" && proc.Alive() {
		lingered = true
		killGroup(proc, 0, nil)
	}
	select {
	case <-readDone:
	case <-time.After(2 * time.Second):
		out.Close() // a process that left the group still holds the pipe
		<-readDone
	}
	out.Close()
	c.close()
	elapsed := time.Since(began)
	if reason == "cancelled" {
		return nil, ctx.Err()
	}
	return s.ended(c, proc, reason, lingered, limit, elapsed), nil
}

// ended is the call's result: the command's output, then how it ended
// (its exit code, a timeout, a signal, the shell's close) and whether
// processes it left running were stopped.
func (s *Shell) ended(c *capture, proc exec.Process, reason string, lingered bool, limit, elapsed time.Duration) *tool.Result {
	var b strings.Builder
	text := c.text(s.display)
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	if text != "" {
		b.WriteByte('\n')
	}
	code, waitErr := proc.Wait()
	res := &tool.Result{Meta: map[string]any{"exit_code": code, "duration_ms": elapsed.Milliseconds()}}
	switch {
	case reason == "closed":
		b.WriteString("Stopped: the shell was closed while the command ran.")
		res.IsError = true
	case reason == "timeout":
		fmt.Fprintf(&b, "Timed out after %s: the command and every process it started were stopped. For long jobs use run_in_background, or give a larger timeout.", limit)
		res.IsError = true
	case code == -1:
		fmt.Fprintf(&b, "Killed by a signal (%v) after %s.", waitErr, round(elapsed))
		res.IsError = true
	default:
		fmt.Fprintf(&b, "Exit code %d (took %s).", code, round(elapsed))
		res.IsError = code != 0
	}
	if lingered {
		b.WriteString("\nProcesses the command left running were stopped; start long-running processes with run_in_background.")
	}
	if c.spillPath != "" {
		res.Meta[tool.MetaSpillPath] = c.spillPath
	}
	res.Parts = tool.Text(b.String()).Parts
	return res
}

func round(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
