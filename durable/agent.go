package durable

import (
	"context"
	"errors"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
)

// RunAgent drives req's turn on a, an agent open on the turn's session
// with agent.Options.Durable set: Run with the turn's prompt, or, when
// req.Resume, Resume of the open turn (hooks are the run-level handlers
// either gets). It is what most Drivers do once they have built the
// agent.
//
// When ctx is done (the worker is stopping), the run is suspended at its
// next safe point (agent.Suspend, with the agent's tool grace) instead of
// cancelled, so the turn stays open for the next worker. A turn that
// ended — in error too — is on the log, where Step reads it; RunAgent
// returns an error only for a run that did not happen.
func RunAgent(ctx context.Context, a *agent.Agent, req *DriveRequest, hooks *hook.Set) error {
	stop := context.AfterFunc(ctx, func() { a.Suspend(0) })
	defer stop()
	run := context.WithoutCancel(ctx)
	var (
		res *agent.Result
		err error
	)
	if req.Resume {
		res, err = a.Resume(run, &agent.ResumeRequest{Hooks: hooks})
	} else {
		res, err = a.Run(run, &agent.RunRequest{Prompt: req.Turn.Prompt, Hooks: hooks})
	}
	if err != nil && res == nil && !errors.Is(err, agent.ErrNothingToResume) {
		return err
	}
	return nil
}
