package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/tool"
)

// editorTasks are a session's background commands that run in editor
// terminals: the shell tool's run_in_background when the editor offers
// terminals. The task tools (task_output, task_wait, task_kill) reach
// them by their ids, e1, e2, …; ids of rein's own background tasks go to
// rein's shell. They run until they end or are killed; session/close
// kills and releases their terminals, and an editor that disconnects
// keeps them.
type editorTasks struct {
	srv *Server
	l   *live

	mu   sync.Mutex
	next int
	byID map[string]*editorTask
}

// editorTask is one background command in an editor terminal.
type editorTask struct {
	id, terminal, command string
	began                 time.Time

	mu    sync.Mutex
	shown int // bytes of its output the model has seen
}

// start records a command started in terminal and words the answer.
func (ts *editorTasks) start(terminal, command string) *tool.Result {
	ts.mu.Lock()
	ts.next++
	id := fmt.Sprintf("e%d", ts.next)
	if ts.byID == nil {
		ts.byID = map[string]*editorTask{}
	}
	ts.byID[id] = &editorTask{id: id, terminal: terminal, command: command, began: time.Now()}
	ts.mu.Unlock()
	return tool.Text(fmt.Sprintf("Started background task %s in the editor's terminal. Check on it with task_output, task_wait or task_kill using id %q.", id, id))
}

func (ts *editorTasks) get(id string) *editorTask {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.byID[id]
}

// close kills and releases every terminal still held.
func (ts *editorTasks) close(ctx context.Context) {
	ts.mu.Lock()
	all := ts.byID
	ts.byID = nil
	ts.mu.Unlock()
	for _, t := range all {
		ts.srv.conn.KillTerminal(ctx, sdk.KillTerminalRequest{SessionId: ts.l.id, TerminalId: t.terminal})
		ts.srv.conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: ts.l.id, TerminalId: t.terminal})
	}
}

// taskTool is task_output, task_wait or task_kill, answering for the
// editor's background tasks and passing rein's own on.
type taskTool struct{ clientTool }

func (t *taskTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a struct {
		ID      string  `json:"id"`
		Timeout float64 `json:"timeout"`
	}
	if json.Unmarshal(call.Args, &a) != nil {
		return t.inner.Call(ctx, call)
	}
	task := t.l.tasks.get(a.ID)
	if task == nil {
		return t.inner.Call(ctx, call)
	}
	conn, sid := t.srv.conn, t.l.id
	lead := ""
	switch t.inner.Spec().Name {
	case "task_kill":
		if _, err := conn.KillTerminal(context.WithoutCancel(ctx), sdk.KillTerminalRequest{SessionId: sid, TerminalId: task.terminal}); err != nil {
			return nil, fmt.Errorf("acp: the editor could not kill the terminal of task %s: %w", task.id, err)
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerWait)
		conn.WaitForTerminalExit(wctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: task.terminal})
		cancel()
	case "task_wait":
		wait := 30 * time.Second
		if a.Timeout > 0 {
			wait = min(time.Duration(a.Timeout*float64(time.Second)), terminalMaxTimeout)
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, err := conn.WaitForTerminalExit(wctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: task.terminal})
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			lead = fmt.Sprintf("Still running after waiting %s.\n", wait)
		}
	}
	out, err := conn.TerminalOutput(context.WithoutCancel(ctx), sdk.TerminalOutputRequest{SessionId: sid, TerminalId: task.terminal})
	if err != nil {
		return nil, fmt.Errorf("acp: read the editor terminal's output: %w", err)
	}
	return task.report(lead, out), nil
}

// report says how the task is doing and shows the output the model has
// not seen yet.
func (t *editorTask) report(lead string, out sdk.TerminalOutputResponse) *tool.Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	b.WriteString(lead)
	res := &tool.Result{Meta: map[string]any{"task": t.id}}
	switch st := out.ExitStatus; {
	case st == nil:
		fmt.Fprintf(&b, "Background task %s (%s) is running in the editor's terminal (for %s).", t.id, t.command, time.Since(t.began).Round(time.Second))
	case st.ExitCode != nil:
		fmt.Fprintf(&b, "Background task %s (%s) exited with code %d.", t.id, t.command, *st.ExitCode)
		res.Meta["exit_code"] = *st.ExitCode
	case st.Signal != nil:
		fmt.Fprintf(&b, "Background task %s (%s) was killed by a signal (%s).", t.id, t.command, *st.Signal)
	default:
		fmt.Fprintf(&b, "Background task %s (%s) ended; the editor gave no exit status.", t.id, t.command)
	}
	text := out.Output
	switch {
	case out.Truncated:
		fmt.Fprintf(&b, "\nOutput (the editor keeps the last %d bytes):\n%s", terminalOutput, text)
	case len(text) > t.shown:
		b.WriteString("\nNew output:\n" + text[t.shown:])
	default:
		b.WriteString("\n(no new output)")
	}
	t.shown = len(text)
	res.Parts = tool.Text(strings.TrimRight(b.String(), "\n")).Parts
	return res
}
