package main

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/session"
)

// registerResume adds --resume to rein run.
func registerResume(cmd *cobra.Command, f *agentFlags) {
	cmd.Flags().BoolVar(&f.resume, "resume", false, "continue the last turn of --session (or of --continue's session) where a crash or a suspend cut it short, instead of sending a prompt")
	cmd.Example += "\n  rein run --session 01J... --resume"
}

// resumeArgs checks the arguments of rein run --resume: none.
func resumeArgs(args []string) error {
	if len(args) > 0 {
		return usageErrorf("rein run --resume continues a turn and takes no PROMPT, got %d arguments; to send a new prompt, leave out --resume", len(args))
	}
	return nil
}

// resumeTurn continues the session's cut-short turn and maps its end to
// an exit code, as runTurn does for a prompt.
func (a *app) resumeTurn(ctx context.Context, f *agentFlags, cont, jsonOut bool, timeout time.Duration) error {
	if f.fork != "" || f.newSession != "" {
		return usageErrorf("--resume continues a turn of an existing session; leave out --fork and --new-session")
	}
	if cont {
		if err := a.continueLatest(ctx, f); err != nil {
			return err
		}
	}
	if f.session == "" {
		return usageErrorf("--resume needs the session whose turn to continue: give --session ID or --continue")
	}
	err := a.streamTurn(ctx, f, jsonOut, timeout, func(ctx context.Context, s *setup) iter.Seq2[session.Event, error] {
		return s.agent.ResumeStream(ctx, &agent.ResumeRequest{Hooks: s.runHooks, Children: true})
	})
	return resumeError(f.session, err)
}

// resumeError says in the CLI's words why a turn cannot be resumed.
func resumeError(id string, err error) error {
	var me *agent.ResumeMismatchError
	switch {
	case errors.Is(err, agent.ErrNothingToResume):
		return usageErrorf("--resume: session %s has no turn to continue (its last turn ended); send a new prompt with --session %s instead", id, id)
	case errors.As(err, &me):
		how := map[string]string{"tools": "--tools", "model": "--model", "version": "rein version"}[me.What]
		return usageErrorf("--resume: the turn was started with %s %q, this run has %q; resume it with the same %s, or send a new prompt with --session %s", me.What, me.Recorded, me.Current, how, id)
	}
	return err
}
