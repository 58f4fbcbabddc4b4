package command

import (
	"context"
	"fmt"
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
