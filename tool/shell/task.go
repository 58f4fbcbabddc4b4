package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
)

// task is one background command.
type task struct {
	id, command string
	began       time.Time
	proc        exec.Process
	logPath     string
	written     atomic.Int64 // bytes in the log so far
	done        chan struct{}

	mu       sync.Mutex
	reason   string // why it was stopped, if it was
	readOff  int64  // what task_output has shown
	exit     TaskExit
	reported bool // the model has seen the end
}

func (t *task) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// stop kills the task's process group and waits for the task to end.
func (t *task) stop(reason string, grace time.Duration) {
	t.mu.Lock()
	if t.reason == "" {
		t.reason = reason
	}
	t.mu.Unlock()
	if !t.isDone() {
		killGroup(t.proc, grace, t.done)
	}
	<-t.done
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (s *Shell) startTask(command string, limit time.Duration) (*tool.Result, error) {
	id := fmt.Sprintf("t%d", s.nextID.Add(1))
	logf, logPath, err := s.spillFile("task-" + id)
	if err != nil {
		return tool.Errorf("could not create the task's log file in %s: %v", s.o.SpillDir, err), nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		logf.Close()
		os.Remove(logPath)
		return tool.Errorf("the shell is closed; commands cannot run"), nil
	}
	proc, out, err := s.start(command)
	if err != nil {
		s.mu.Unlock()
		logf.Close()
		return tool.Errorf("could not start %s: %v", s.shell, err), nil
	}
	t := &task{id: id, command: command, began: time.Now(), proc: proc, logPath: logPath, done: make(chan struct{})}
	s.tasks[id] = t
	s.order = append(s.order, id)
	s.wg.Add(2)
	s.mu.Unlock()
	s.log.Info("background task started", "id", id, "pid", proc.Pid())

	readDone := make(chan struct{})
	go func() {
		defer s.wg.Done()
		defer close(readDone)
		io.Copy(countingWriter{logf, &t.written}, out)
	}()
	go func() {
		defer s.wg.Done()
		exited := t.proc.Done()
		var timeout <-chan time.Time
		if limit > 0 {
			tm := time.NewTimer(limit)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-exited:
		case <-timeout:
			t.mu.Lock()
			if t.reason == "" {
				t.reason = "timeout"
			}
			t.mu.Unlock()
			killGroup(t.proc, s.o.KillGrace, exited)
			<-exited
		}
		// The task is over when its leader is: stop what it left behind.
		killGroup(t.proc, 0, nil)
		select {
		case <-readDone:
		case <-time.After(2 * time.Second):
			out.Close() // a process that left the group still holds the pipe
			<-readDone
		}
		out.Close()
		logf.Close()
		t.mu.Lock()
		reason := t.reason
		if reason == "" {
			reason = "exited"
		}
		t.exit = TaskExit{ID: id, Command: command, ExitCode: exitCode(t.proc), Reason: reason,
			Duration: time.Since(t.began), LogPath: s.display(logPath)}
		t.mu.Unlock()
		s.mu.Lock()
		s.exits = append(s.exits, t.exit)
		s.mu.Unlock()
		close(t.done)
		s.log.Info("background task ended", "id", id, "reason", reason)
	}()
	return tool.Text(fmt.Sprintf("Started background task %s (process group %d). Its output goes to %s; check on it with task_output, task_wait or task_kill using id %q.",
		id, t.proc.Pid(), s.display(logPath), id)), nil
}

func (s *Shell) lookup(id string) (*task, *tool.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tasks[id]; ok {
		return t, nil
	}
	ids := make([]string, 0, len(s.tasks))
	for k, t := range s.tasks {
		if !t.isDone() {
			ids = append(ids, k)
		}
	}
	sort.Strings(ids)
	running := "none are running"
	if len(ids) > 0 {
		running = "running: " + strings.Join(ids, ", ")
	}
	return nil, tool.Errorf("there is no background task %q (%s)", id, running)
}

// report says how the task is doing and shows its output since the last
// report, at most OutputLimit bytes of it (the newest).
func (s *Shell) report(t *task, lead string) *tool.Result {
	done := t.isDone()
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	if lead != "" {
		b.WriteString(lead)
		b.WriteByte('\n')
	}
	res := &tool.Result{Meta: map[string]any{"task": t.id}}
	if done {
		t.reported = true
		s.unqueue(t.id)
		b.WriteString(t.exit.String())
		res.Meta["exit_code"] = t.exit.ExitCode
	} else {
		fmt.Fprintf(&b, "Background task %s (%s) is running (for %s).", t.id, t.command, round(time.Since(t.began)))
	}
	end := t.written.Load()
	from := t.readOff
	if end == from {
		b.WriteString("\n(no new output)")
		return withText(res, b.String())
	}
	skipped := int64(0)
	if end-from > int64(s.o.OutputLimit) {
		skipped = end - from - int64(s.o.OutputLimit)
		from = end - int64(s.o.OutputLimit)
	}
	buf := make([]byte, end-from)
	f, err := os.Open(t.logPath)
	if err == nil {
		_, err = f.ReadAt(buf, from)
		f.Close()
	}
	if err != nil && err != io.EOF {
		fmt.Fprintf(&b, "\n(the output could not be read: %v)", err)
		return withText(res, b.String())
	}
	t.readOff = end
	b.WriteString("\nNew output:\n")
	if skipped > 0 {
		fmt.Fprintf(&b, "… [%d earlier bytes skipped; the full log is %s] …\n", skipped, s.display(t.logPath))
	}
	b.Write(buf)
	return withText(res, strings.TrimRight(b.String(), "\n"))
}

// unqueue drops a task's exit from the Drain queue; the model has seen
// it. s.mu must not be held by the caller.
func (s *Shell) unqueue(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.exits {
		if e.ID == id {
			s.exits = append(s.exits[:i], s.exits[i+1:]...)
			return
		}
	}
}

func withText(r *tool.Result, s string) *tool.Result {
	r.Parts = tool.Text(s).Parts
	return r
}

type taskArgs struct {
	ID      string  `json:"id"`
	Timeout float64 `json:"timeout"`
}

func taskOutputSpec() tool.Spec {
	return tool.Spec{
		Name:        "task_output",
		Description: "Show a background task's status and the output it wrote since you last looked.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"the task id that shell returned"}},"required":["id"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{ReadOnly: true},
	}
}

func taskKillSpec() tool.Spec {
	return tool.Spec{
		Name:        "task_kill",
		Description: "Stop a background task and every process it started (SIGTERM, then SIGKILL).",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"the task id that shell returned"}},"required":["id"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{Destructive: true, Idempotent: true},
	}
}

func taskWaitSpec() tool.Spec {
	return tool.Spec{
		Name:        "task_wait",
		Description: "Wait for a background task to end, at most timeout seconds (default 30), then show its status and new output.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"the task id that shell returned"},` +
			`"timeout":{"type":"number","exclusiveMinimum":0,"description":"seconds to wait at most (default 30, at most 600)"}},` +
			`"required":["id"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{ReadOnly: true},
	}
}

func (s *Shell) callTaskOutput(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a taskArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	t, r := s.lookup(a.ID)
	if r != nil {
		return r, nil
	}
	return s.report(t, ""), nil
}

func (s *Shell) callTaskKill(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a taskArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	t, r := s.lookup(a.ID)
	if r != nil {
		return r, nil
	}
	if t.isDone() {
		return s.report(t, fmt.Sprintf("Task %s had already ended.", t.id)), nil
	}
	t.stop("killed", s.o.KillGrace)
	return s.report(t, ""), nil
}

func (s *Shell) callTaskWait(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a taskArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	t, r := s.lookup(a.ID)
	if r != nil {
		return r, nil
	}
	wait := 30 * time.Second
	if a.Timeout > 0 {
		wait = time.Duration(a.Timeout * float64(time.Second))
	}
	wait = min(wait, s.o.MaxTimeout)
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-t.done:
		return s.report(t, ""), nil
	case <-tm.C:
		return s.report(t, fmt.Sprintf("Still running after waiting %s.", wait)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func exitCode(p exec.Process) int {
	code, _ := p.Wait()
	return code
}
