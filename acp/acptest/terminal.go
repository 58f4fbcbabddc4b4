package acptest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// RunTerminals makes the client run terminal requests as an editor does:
// each command a local process, its output kept for terminal/output.
// Without it they answer method not found. Call it before connecting, and
// advertise clientCapabilities.terminal in initialize.
func (c *Client) RunTerminals() {
	c.terminals = &terminals{byID: map[string]*term{}}
}

type terminals struct {
	mu   sync.Mutex
	next int
	byID map[string]*term
}

// term is one command in a fake editor terminal.
type term struct {
	cmd   *exec.Cmd
	limit int
	done  chan struct{} // closed when the command ended

	mu     sync.Mutex
	out    bytes.Buffer
	status sdk.WaitForTerminalExitResponse
}

func (t *term) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.Write(p)
}

func (c *Client) term(method, id string) (*term, error) {
	if c.terminals == nil {
		return nil, sdk.NewMethodNotFound(method)
	}
	c.terminals.mu.Lock()
	defer c.terminals.mu.Unlock()
	t := c.terminals.byID[id]
	if t == nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": "no terminal " + id})
	}
	return t, nil
}

// CreateTerminal starts the command and records it as
// "terminal <command> <args…>" with the variables it was given.
func (c *Client) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	if c.terminals == nil {
		return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
	}
	cmd := exec.Command(p.Command, p.Args...)
	if p.Cwd != nil {
		cmd.Dir = *p.Cwd
	}
	cmd.Env = os.Environ()
	var names []string
	for _, e := range p.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		names = append(names, e.Name+"="+e.Value)
	}
	t := &term{cmd: cmd, done: make(chan struct{})}
	if p.OutputByteLimit != nil {
		t.limit = *p.OutputByteLimit
	}
	cmd.Stdout, cmd.Stderr = t, t
	if err := cmd.Start(); err != nil {
		return sdk.CreateTerminalResponse{}, err
	}
	go func() {
		defer close(t.done)
		err := cmd.Wait()
		t.mu.Lock()
		defer t.mu.Unlock()
		if st := cmd.ProcessState; st != nil && st.ExitCode() >= 0 {
			t.status.ExitCode = sdk.Ptr(st.ExitCode())
		} else if err != nil {
			t.status.Signal = sdk.Ptr(err.Error())
		}
	}()
	c.terminals.mu.Lock()
	c.terminals.next++
	id := fmt.Sprintf("term%d", c.terminals.next)
	c.terminals.byID[id] = t
	c.terminals.mu.Unlock()
	c.mu.Lock()
	line := strings.Join(append([]string{p.Command}, p.Args...), " ")
	if len(names) > 0 {
		line += " [" + strings.Join(names, " ") + "]"
	}
	c.record("terminal ", line, false)
	c.mu.Unlock()
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

// WaitForTerminalExit waits for the command to end.
func (c *Client) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	t, err := c.term(sdk.ClientMethodTerminalWaitForExit, p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status, nil
}

// TerminalOutput returns the output so far, cut from the front to the
// requested limit.
func (c *Client) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	t, err := c.term(sdk.ClientMethodTerminalOutput, p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	ended := false
	select {
	case <-t.done:
		ended = true
	default:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.out.String()
	resp := sdk.TerminalOutputResponse{}
	if t.limit > 0 && len(out) > t.limit {
		out, resp.Truncated = out[len(out)-t.limit:], true
	}
	resp.Output = out
	if ended {
		st := t.status
		resp.ExitStatus = &sdk.TerminalExitStatus{ExitCode: st.ExitCode, Signal: st.Signal}
	}
	return resp, nil
}

// KillTerminal kills the command.
func (c *Client) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	t, err := c.term(sdk.ClientMethodTerminalKill, p.TerminalId)
	if err != nil {
		return sdk.KillTerminalResponse{}, err
	}
	t.cmd.Process.Kill()
	return sdk.KillTerminalResponse{}, nil
}

// ReleaseTerminal kills the command if it still runs and forgets it.
func (c *Client) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	t, err := c.term(sdk.ClientMethodTerminalRelease, p.TerminalId)
	if err != nil {
		return sdk.ReleaseTerminalResponse{}, err
	}
	t.cmd.Process.Kill()
	<-t.done
	c.terminals.mu.Lock()
	delete(c.terminals.byID, p.TerminalId)
	c.terminals.mu.Unlock()
	c.mu.Lock()
	c.record("terminal ", p.TerminalId+" released", false)
	c.mu.Unlock()
	return sdk.ReleaseTerminalResponse{}, nil
}
