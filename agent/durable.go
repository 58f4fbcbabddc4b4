package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/session"
)

// ErrNothingToResume is returned (wrapped) by Resume when the session has
// no open turn to continue.
var ErrNothingToResume = errors.New("agent: nothing to resume: the session has no open turn; start a new turn with Run")

// ResumeRequest is one call of Resume or ResumeStream. The turn's prompt
// is on the log; what is not on the log is given again here.
type ResumeRequest struct {
	// Hooks are run-level handlers, after the agent's; gone after the run.
	Hooks *hook.Set
	// Schema is the output schema the turn was started with, if any.
	Schema json.RawMessage
	// MaxSteps overrides Limits.MaxSteps for the rest of the turn when
	// positive; the steps the turn already took count.
	MaxSteps int
	// Children makes ResumeStream yield the subagents' events too, as
	// RunRequest.Children does.
	Children bool
}

// ResumeMismatchError refuses a resume whose agent differs from the one
// that started the turn in what the turn's records pin: its tool set
// ("tools"), its primary model ("model") or its program's version
// ("version").
type ResumeMismatchError struct {
	Session  session.ID
	Turn     session.TurnID
	What     string // "tools", "model" or "version"
	Recorded string // what the turn was started with
	Current  string // what this agent has
}

// Error says what differs and what to do.
func (e *ResumeMismatchError) Error() string {
	return fmt.Sprintf("agent: cannot resume turn %s of session %s: it was started with %s %s, this agent has %s; resume it with the same %s, or start a new turn with Run",
		e.Turn, e.Session, e.What, quoteOr(e.Recorded), quoteOr(e.Current), e.What)
}

func quoteOr(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// Resume continues the turn of the agent's session that stopped before it
// ended, from its last completed record, and blocks until the turn ends,
// like Run. A step whose model call finished is not sent again. Of the
// calls of the step that was in flight, those with a result keep it; a
// started call of a tool that may be re-run (tool.Rerunnable) runs again;
// a started call of any other tool is answered as interrupted, outcome
// unknown (session.CodeOutcomeUnknown), so the model is told and decides;
// a call that never started runs. The loop then goes on.
//
// A turn a Suspend stopped is open on the log and continues in place (a
// durable agent, Options.Durable, leaves it open when it opens the
// session). A turn a crash cut short is closed by the store's or New's
// repair (turn.end interrupted, the calls in flight answered as
// interrupted or not started); Resume continues it in a new turn with
// trigger resume, whose first step calls again, as the harness's own
// message, the calls that are to run. The turn.resume record says which.
//
// With nothing to continue (the last turn ended otherwise, or a turn came
// after it) it returns an error wrapping ErrNothingToResume; when the
// agent's tools, primary model or version differ from what the turn was
// started with, a *ResumeMismatchError, and nothing is written.
func (a *Agent) Resume(ctx context.Context, req *ResumeRequest) (*Result, error) {
	return a.resume(ctx, req, nil)
}

// ResumeStream is Resume as a sequence of events, as Stream is to Run.
func (a *Agent) ResumeStream(ctx context.Context, req *ResumeRequest) iter.Seq2[session.Event, error] {
	return streamOf(func(fn func(session.Event) bool) error {
		_, err := a.resume(ctx, req, fn)
		return err
	})
}

// Suspend asks the run in flight to stop at its next safe point so that
// Resume continues it later: between steps, or once the model call in
// flight has answered, or in a tool batch once the calls running settle.
// No call starts after it; a call still running grace after Suspend is
// cancelled and left without a result, for Resume to re-run or report as
// interrupted. The run then returns with reason session.EndSuspended and
// the turn stays open on the log, with a turn.suspend record. Steers and
// injects that arrive too late to be recorded without splitting the open
// step are kept in memory for this agent's next run (the Resume). A Run,
// a manual Compact or an idle Inject that comes before the Resume closes
// the suspended turn as interrupted. A model call in flight is not cut:
// the run stops once it answers. Suspend does not wait (see WaitIdle); it
// returns ErrIdle when no run is in flight. A grace of zero or less means
// Options.ToolGrace.
func (a *Agent) Suspend(grace time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctl == nil {
		return ErrIdle
	}
	if grace <= 0 {
		grace = a.calls.grace
	}
	a.ctl.suspendLocked(grace)
	return nil
}

// suspension is a Suspend asked of a run: when, and how long its running
// calls may take to settle.
type suspension struct {
	at    time.Time
	grace time.Duration
}

// end is when the calls running under the Suspend have had their grace.
func (s *suspension) end() time.Time { return s.at.Add(s.grace) }

func (c *control) suspendLocked(grace time.Duration) {
	if c.suspend.Load() != nil || c.cancelled {
		return
	}
	c.suspend.Store(&suspension{at: time.Now(), grace: grace})
	c.kickLocked()
}

func (a *Agent) resume(ctx context.Context, req *ResumeRequest, fn func(session.Event) bool) (*Result, error) {
	if req == nil {
		req = &ResumeRequest{}
	}
	rr := &RunRequest{Hooks: req.Hooks, Schema: req.Schema, MaxSteps: req.MaxSteps, Children: req.Children}
	return a.launch(ctx, rr, fn, func(r *runState) (*Result, error) { return r.resumeTurn() })
}
