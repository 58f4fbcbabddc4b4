package command

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/session"
)

// FireRequest is a session event the host fires itself.
type FireRequest struct {
	// Event is SessionStart, SessionEnd or PreCompact.
	Event   string
	Session session.ID
	// Source is SessionStart's startup, resume, clear or compact.
	Source string
	// Reason is SessionEnd's reason: clear, logout, prompt_input_exit, other.
	Reason string
	// Trigger is PreCompact's manual or auto; Instructions its custom
	// instructions.
	Trigger      string
	Instructions string
}

// FireResult is what the hooks of a fired event answered.
type FireResult struct {
	// Blocked joins the reasons of hooks that blocked (exit 2, "block").
	Blocked string
	// Stop is the stopReason of a hook that answered continue: false.
	Stop string
	// Context is the context the hooks added; it is also queued for
	// Notices.
	Context []string
}

// EnvFile is the file SessionStart hooks of session id are told as
// $CLAUDE_ENV_FILE, where they write "export NAME=value" lines for the
// session's later shell commands; a host has its shell read it (bash's
// BASH_ENV). It is "" without Options.EnvDir.
func (r *Runner) EnvFile(id session.ID) string {
	if r.opts.EnvDir == "" || id == "" {
		return ""
	}
	return filepath.Join(r.opts.EnvDir, string(id)+".sh")
}

// touch creates the file at p, and its directory, if missing.
func touch(p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("command: CLAUDE_ENV_FILE directory: %w; check that %s is writable", err, filepath.Dir(p))
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("command: CLAUDE_ENV_FILE: %w", err)
	}
	return f.Close()
}

// Fire runs the hooks of a session event rein's hook points do not cover:
// SessionStart (its context reaches the next request through Notices),
// SessionEnd and PreCompact. A command that times out is an error.
func (r *Runner) Fire(ctx context.Context, req *FireRequest) (*FireResult, error) {
	switch req.Event {
	case SessionStart, SessionEnd, PreCompact:
	default:
		return nil, fmt.Errorf("command: Fire handles SessionStart, SessionEnd and PreCompact, not %q; the other events run through Hooks", req.Event)
	}
	c := &call{event: req.Event, scope: hook.Scope{Session: req.Session},
		in: input{Source: req.Source, Reason: req.Reason, Trigger: req.Trigger}}
	if req.Event == PreCompact {
		c.in.Instructions = &req.Instructions
	}
	if req.Event == SessionStart {
		if p := r.EnvFile(req.Session); p != "" {
			if err := touch(p); err != nil {
				return nil, err
			}
			c.env = []string{"CLAUDE_ENV_FILE=" + p}
		}
	}
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	out := &FireResult{}
	var block []string
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		if a.stop && out.Stop == "" {
			out.Stop = a.stopReason
		}
		if a.kind == kindBlock {
			block = append(block, a.reason)
		}
		out.Context = append(out.Context, a.context...)
	}
	out.Blocked = strings.Join(block, "; ")
	r.addContext(out.Context)
	return out, nil
}
