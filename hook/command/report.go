package command

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// Report describes one command run: what ran, how it ended and what it
// decided. Payload turns it into a hook.decision event.
type Report struct {
	Event    string
	Matcher  string
	Command  string
	Source   string
	Session  session.ID
	Turn     session.TurnID
	CallID   llm.CallID
	Tool     string
	ExitCode int // -1 when the process was killed or did not start
	Duration time.Duration
	TimedOut bool
	// Decision is continue, deny, allow, ask, edit, stop, nudge, context
	// or error (a non-blocking error, or a failure that failed closed).
	Decision      string
	Reason        string
	SystemMessage string
	Stderr        string // bounded, with rein's secrets cut out
}

// Payload returns the report as a hook.decision event payload; Detail
// carries the command, exit code and duration.
func (r *Report) Payload() *session.HookDecision {
	detail, _ := json.Marshal(struct {
		Event      string `json:"event"`
		Command    string `json:"command"`
		Source     string `json:"source,omitempty"`
		ExitCode   int    `json:"exit_code"`
		DurationMS int64  `json:"duration_ms"`
		TimedOut   bool   `json:"timed_out,omitempty"`
		System     string `json:"system_message,omitempty"`
	}{r.Event, r.Command, r.Source, r.ExitCode, r.Duration.Milliseconds(), r.TimedOut, r.SystemMessage})
	return &session.HookDecision{
		Point: pointOf(r.Event), Hook: r.Command, Decision: r.Decision,
		Reason: r.Reason, CallID: r.CallID, Detail: detail,
	}
}

func pointOf(event string) string {
	switch event {
	case PreToolUse:
		return string(hook.PointPreToolUse)
	case PostToolUse, PostToolUseFailure:
		return string(hook.PointToolResult)
	case UserPromptSubmit:
		return string(hook.PointPrompt)
	case Stop:
		return string(hook.PointFinalize)
	}
	return event
}

// report records one command run on the session log (through hook.Note)
// and tells OnReport and the logger about it; decision
// overrides the answer's own kind when set.
func (r *Runner) report(ctx context.Context, c *call, x *result, decision string) {
	a := &x.ans
	rep := Report{
		Event: c.event, Matcher: x.e.Matcher, Command: x.e.Command, Source: x.e.Source,
		Session: c.scope.Session, Turn: c.scope.Turn, CallID: c.id, Tool: c.tool,
		ExitCode: x.out.exit, Duration: x.out.dur, TimedOut: x.out.timedOut,
		SystemMessage: a.system, Stderr: x.out.stderr,
	}
	switch {
	case x.out.err != nil:
		rep.Decision, rep.Reason = "error", x.out.err.Error()
	case decision != "":
		rep.Decision = decision
	case a.stop:
		rep.Decision, rep.Reason = "stop", a.stopReason
	case a.kind == kindBlock:
		rep.Decision, rep.Reason = "deny", a.reason
	case a.kind == kindAsk:
		rep.Decision, rep.Reason = "ask", a.reason
	case a.kind == kindAllow:
		rep.Decision, rep.Reason = "allow", a.reason
	case a.update != nil:
		rep.Decision = "edit"
	case a.warning != "":
		rep.Decision, rep.Reason = "error", a.warning
	case len(a.context) > 0:
		rep.Decision = "context"
	default:
		rep.Decision = "continue"
	}
	if rep.Reason == "" && a.warning != "" {
		rep.Reason = a.warning
	}
	lg := r.opts.Logger
	if rep.Decision == "error" {
		lg.Warn("hook command failed", "event", c.event, "command", x.e.Command, "exit", rep.ExitCode, "reason", rep.Reason)
	}
	if a.system != "" {
		lg.Info("hook message", "event", c.event, "command", x.e.Command, "message", a.system)
	}
	// Every command run is on the session log with what it did, except
	// the plain continues of commands that said nothing.
	if rep.Decision != "continue" || rep.ExitCode != 0 {
		hook.Note(ctx, rep.Payload())
	}
	if r.opts.OnReport != nil {
		r.opts.OnReport(rep)
	}
}
