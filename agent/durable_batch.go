package agent

import (
	"context"
	"errors"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/todo"
)

var errSuspended = errors.New("agent: the turn was suspended")

// suspended returns the Suspend asked of the run whose context is ctx,
// or nil when none is, or the run is cancelled (a cancel wins). It takes
// no lock: the loop asks often.
func (c *control) suspended(ctx context.Context) *suspension {
	if ctx.Err() != nil {
		return nil
	}
	return c.suspend.Load()
}

// suspending reports whether a Suspend asks the run to stop.
func (r *runState) suspending() bool { return r.ctl.suspended(r.ctx) != nil }

// suspendGrace fires when the calls running under a Suspend have had
// their grace; nil when no Suspend is asked.
func (b *batch) suspendGrace() <-chan time.Time {
	s := b.ctl.suspended(b.ctx)
	if s == nil {
		return nil
	}
	return time.After(time.Until(s.end()))
}

// carried is what a suspended run could not record without breaking its
// open step: injects and steers for the agent's next run (the Resume),
// which delivers them at its first step boundary. They live in memory.
type carried struct{ injects, steers []queued }

// carry keeps late injects and steers of a suspended run; a.mu is held.
func (a *Agent) carry(r *runState, injects, steers []queued) {
	a.carried.injects = append(a.carried.injects, injects...)
	a.carried.steers = append(a.carried.steers, steers...)
	a.log.Warn("messages sent while the run suspended are kept in memory for the agent's next run", "session", r.sid, "injects", len(injects), "steers", len(steers))
}

// admit runs a call's pipeline up to execution, except for a call a
// resume runs again: it passed the pipeline when it first started.
func (b *batch) admit(s *callState) *verdict {
	if s.rerun {
		return nil
	}
	return b.admitCall(s)
}

// log writes a settled call's result, once.
func (b *batch) log(s *callState) {
	if s.logged {
		return
	}
	s.logged = true
	b.run.emit(&session.ToolResult{CallID: s.call.ID, Name: s.call.Name, Parts: s.res.Parts, IsError: s.res.IsError, Code: s.code, Outcome: s.outcome, Duration: s.dur, Interrupted: s.interrupted})
	if plan := planOf(s.res); plan != nil {
		b.run.emit(plan)
	}
}

// planOf is the todo.write a result of the todo tool records: the list as
// the write left it; nil for any other result.
func planOf(res *tool.Result) *session.TodoWrite {
	items, ok := res.Meta[todo.MetaKey].([]todo.Item)
	if !ok || res.IsError {
		return nil
	}
	plan := &session.TodoWrite{Items: make([]session.TodoItem, len(items))}
	for i, it := range items {
		plan.Items[i] = session.TodoItem{ID: it.ID, Content: it.Content, Status: it.Status}
	}
	return plan
}

// restore takes a call of a resumed step from its records. It reports
// true when the call is settled: its result was on the log, or it started
// and its tool may not be re-run, so it is answered as interrupted (the
// repair's result: its outcome is unknown). A started call of a tool that
// may be re-run is readied to run again with its recorded arguments; a
// call that never started goes through the whole pipeline.
func (b *batch) restore(s *callState, p *resumePlan) bool {
	id := s.call.ID
	if p.results[id] != nil {
		s.settled, s.logged = true, true
		b.ctl.settle(id)
		return true
	}
	tc := p.started[id]
	if tc == nil {
		return false
	}
	if e := b.run.entry(s.call.Name); e != nil && e.rerun {
		s.entry, s.args, s.coerced, s.rerun = e, tc.Args, tc.Coerced, true
		return false
	}
	s.interrupted = true
	rep := p.interrupted[id]
	b.settle(s, &verdict{res: &tool.Result{Parts: rep.Parts, IsError: rep.IsError}, outcome: rep.Outcome, code: rep.Code})
	return true
}

// suspend ends a batch a Suspend stopped: every settled result is written
// (in the model's order, skipping the calls still open), and the step is
// left open with the calls that have none.
func (b *batch) suspend() *turnEnd {
	var open []llm.CallID
	for _, s := range b.calls {
		if s.settled {
			b.log(s)
		} else {
			open = append(open, s.call.ID)
		}
	}
	return &turnEnd{reason: session.EndSuspended, open: open}
}

// leave cancels the calls still running when a Suspend's grace is over
// and leaves them without a result: the resume decides, by their tools,
// whether they run again or are answered as interrupted. Their
// goroutines finish on their own; Close waits for them.
func (b *batch) leave() {
	for _, s := range b.calls {
		if s.settled || s.abandoned || s.ctx == nil {
			continue
		}
		s.abandoned = true
		b.leaked = true
		b.running--
		b.ctl.settle(s.call.ID) // done with for this run: CancelTool has nothing to cancel
		s.cancel(errSuspended)
	}
}

// durableStart makes the start of a call that may not be re-run durable
// before it runs, on a durable agent: a crash after it must not run the
// call a second time. It reports whether the call may start.
func (b *batch) durableStart(s *callState) bool {
	if !b.x.durable || s.entry.rerun {
		return true
	}
	if err := b.run.sync(); err != nil {
		b.x.log.Error("the start of a tool call could not be made durable; it does not run", "call", s.call.ID, "err", err)
		return false
	}
	return true
}
