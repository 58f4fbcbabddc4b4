package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/session"
)

// Step drives turn t on st through d until the turn has ended, and
// returns its outcome. It is the step an engine records for a turn, and
// it may run any number of times for one turn: it finds the turn on the
// log (the main agent's first turn after t.After) and
//   - runs it (DriveRequest.Resume false) when the log has none yet,
//   - resumes it when it is open (a run that drove it was cut short, on a
//     store that keeps it open) or was closed as interrupted by a repair
//     (a store that closes it): the agent continues it, in a new turn of
//     trigger resume for the latter,
//   - only reads it when it has ended: the run ended, the engine did not
//     record so, and no model or tool is called again.
//
// The log, not the engine, is the fine-grained record: which model calls
// and tool calls a resume skips is the agent's to decide from it.
//
// When st is a Holder, Step holds the session's lease while it drives
// the turn (a live holder elsewhere is an error wrapping
// session.ErrLocked, for the engine to retry) and releases it after.
func Step(ctx context.Context, st session.Store, t *Turn, d Driver) (*Outcome, error) {
	if t == nil || t.Session == "" {
		return nil, errors.New("durable: the turn names no session")
	}
	if h, ok := st.(Holder); ok {
		if err := h.Hold(ctx, t.Session); err != nil {
			return nil, fmt.Errorf("durable: hold session %s: %w", t.Session, err)
		}
		defer h.Release(context.WithoutCancel(ctx), t.Session)
	}
	o, open, err := Find(ctx, st, t)
	if err != nil {
		return nil, err
	}
	if o != nil && !open && o.Reason != session.EndInterrupted {
		return o, nil
	}
	derr := d.Drive(ctx, &DriveRequest{Turn: t, Resume: o != nil})
	// Read how the run left the turn even when ctx ended it (a stopping
	// worker's run suspends); a turn that ended is the outcome, whatever
	// the Driver said.
	if o, open, err = Find(context.WithoutCancel(ctx), st, t); err != nil {
		return nil, err
	}
	switch {
	case o != nil && !open:
		return o, nil
	case derr != nil:
		return nil, fmt.Errorf("durable: drive the turn of session %s: %w", t.Session, derr)
	case o == nil:
		return nil, fmt.Errorf("durable: the run recorded no turn in session %s after seq %d", t.Session, t.After)
	}
	return nil, ErrStillOpen
}

// Find reads turn t from the log: the main agent's first turn after
// t.After, and the turns of trigger resume that continue it after a
// repair closed it as interrupted; the outcome is the last one's end. It
// returns nil when the log holds none yet, and open when the turn has no
// end yet (the outcome then has only Start and Resumed). It reads only
// the events after t.After.
func Find(ctx context.Context, st session.Store, t *Turn) (o *Outcome, open bool, err error) {
	for ev, err := range st.Events(ctx, t.Session, t.After) {
		if err != nil {
			return nil, false, fmt.Errorf("durable: read session %s: %w", t.Session, err)
		}
		if ev.ParentRun != "" {
			continue // a subagent's
		}
		switch p := ev.Data.(type) {
		case *session.TurnStart:
			switch {
			case o == nil:
				o = &Outcome{Session: t.Session, Start: ev.Seq}
			case o.End == 0:
				// Inside the open turn: not a turn of the main agent's.
			case o.Reason == session.EndInterrupted && p.Trigger == session.TriggerResume:
				// It continues the turn a repair closed (its turn.resume
				// counts it).
				o.End, o.Reason, o.Cause, o.Message = 0, "", "", ""
			default:
				return o, false, nil // a turn of its own
			}
		case *session.TurnResume:
			if o != nil {
				o.Resumed++
			}
		case *session.TurnEnd:
			if o != nil && o.End == 0 {
				o.End, o.Reason, o.Cause, o.Message = ev.Seq, p.Reason, p.Cause, p.Message
			}
		}
	}
	return o, o != nil && o.End == 0, nil
}
