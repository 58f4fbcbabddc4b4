package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/sandbox"
)

// Terminal defaults, as rein's own shell tool has them.
const (
	terminalTimeout    = 2 * time.Minute
	terminalMaxTimeout = 10 * time.Minute
	terminalOutput     = 30_000 // bytes the editor keeps, from the end
)

// terminalShell runs shell commands in an editor terminal.
type terminalShell struct{ clientTool }

func (t *terminalShell) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var in struct {
		Command    string  `json:"command"`
		Timeout    float64 `json:"timeout"`
		Background bool    `json:"run_in_background"`
	}
	if err := json.Unmarshal(call.Args, &in); err != nil {
		return t.inner.Call(ctx, call)
	}
	if err := t.policy.Commands.Check(in.Command); err != nil {
		var ce *sandbox.CommandError
		if errors.As(err, &ce) {
			return tool.Errorf("%s", ce.Reason), nil
		}
		return tool.Errorf("%v", err), nil
	}
	term, err := t.open(ctx, call, in.Command)
	if err != nil {
		return nil, err
	}
	if in.Background {
		return t.l.tasks.start(term, in.Command), nil
	}
	limit := terminalTimeout
	if in.Timeout > 0 {
		limit = min(time.Duration(in.Timeout*float64(time.Second)), terminalMaxTimeout)
	}
	conn, sid := t.srv.conn, t.l.id
	// Release and kill on a context of their own: they must reach the
	// editor after a cancel too.
	bg := context.WithoutCancel(ctx)
	defer conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: term})
	began := time.Now()
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	exit, werr := conn.WaitForTerminalExit(wctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: term})
	if werr != nil {
		conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: sid, TerminalId: term})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	out, oerr := conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: term})
	if oerr != nil {
		return nil, fmt.Errorf("acp: read the editor terminal's output: %w", oerr)
	}
	return terminalResult(out, exit, werr, limit, time.Since(began)), nil
}

// open starts command in an editor terminal, shown beside call, and
// returns the terminal's id.
func (t *terminalShell) open(ctx context.Context, call *tool.Call, command string) (string, error) {
	term, err := t.srv.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{
		SessionId: t.l.id, Command: "bash", Args: []string{"-c", command},
		Cwd: sdk.Ptr(t.l.cwd), Env: blankSecrets(os.Environ()), OutputByteLimit: sdk.Ptr(terminalOutput),
	})
	if err != nil {
		return "", fmt.Errorf("acp: the editor could not open a terminal: %w", err)
	}
	t.srv.send(t.l.id, sdk.UpdateToolCall(sdk.ToolCallId(call.ID), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(term.TerminalId)})))
	return term.TerminalId, nil
}

// terminalResult words a finished command as rein's shell does: the
// output, then how it ended.
func terminalResult(out sdk.TerminalOutputResponse, exit sdk.WaitForTerminalExitResponse, werr error, limit, took time.Duration) *tool.Result {
	var b strings.Builder
	if out.Truncated {
		fmt.Fprintf(&b, "[output truncated: the last %d bytes]\n", terminalOutput)
	}
	b.WriteString(out.Output)
	if out.Output != "" {
		if !strings.HasSuffix(out.Output, "\n") {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	res := &tool.Result{}
	took = took.Round(10 * time.Millisecond)
	switch {
	case werr != nil:
		fmt.Fprintf(&b, "Timed out after %s: the command was stopped. For long jobs use run_in_background, or give a larger timeout.", limit)
		res.IsError = true
	case exit.ExitCode != nil:
		fmt.Fprintf(&b, "Exit code %d (took %s).", *exit.ExitCode, took)
		res.IsError = *exit.ExitCode != 0
	case exit.Signal != nil:
		fmt.Fprintf(&b, "Killed by a signal (%s) after %s.", *exit.Signal, took)
		res.IsError = true
	default:
		fmt.Fprintf(&b, "The command ended after %s; the editor gave no exit status.", took)
	}
	res.Parts = tool.Text(b.String()).Parts
	return res
}

// blankSecrets returns empty values for the variables of env whose names
// look like credentials (exec.CredentialName, the rule rein's shell
// withholds by), so a command in the editor's terminal does not see the
// keys the editor handed rein.
func blankSecrets(env []string) []sdk.EnvVariable {
	var out []sdk.EnvVariable
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); exec.CredentialName(name) {
			out = append(out, sdk.EnvVariable{Name: name, Value: ""})
		}
	}
	return out
}
