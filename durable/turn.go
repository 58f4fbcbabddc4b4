package durable

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/reinhq/rein/session"
)

// Turn is one turn handed to an engine: a prompt for a session, and the
// settings of the agent that answers it, which the engine carries without
// reading.
type Turn struct {
	Session session.ID `json:"session"`
	Prompt  string     `json:"prompt"`
	// Agent is the host's description of the agent to build (model,
	// tools, limits …), given back to its Driver on whichever worker
	// runs the turn.
	Agent json.RawMessage `json:"agent,omitempty"`
	// After is the session's last seq when the turn began on a worker;
	// the turn is the first one the log holds after it. Engines record it
	// once, before the turn is driven, so a re-execution finds the same
	// turn; submitters leave it zero.
	After int64 `json:"after,omitempty"`
}

// Outcome is how a turn ended, as its log says.
type Outcome struct {
	Session session.ID        `json:"session"`
	Start   int64             `json:"start"` // seq of the turn.start
	End     int64             `json:"end"`   // seq of the turn.end
	Reason  session.EndReason `json:"reason"`
	Cause   string            `json:"cause,omitempty"`
	Message string            `json:"message,omitempty"`
	// Resumed counts the runs that continued the turn after its first.
	Resumed int `json:"resumed,omitempty"`
}

// DriveRequest is one call of a Driver.
type DriveRequest struct {
	Turn *Turn
	// Resume says the turn is open on the log (a run that drove it was cut
	// short, or suspended): continue it rather than prompt again.
	Resume bool
}

// Driver runs the agent of a turn until the run ends: a new run with the
// turn's prompt, or a resume of the open turn when req.Resume. The turn's
// records go to the session log, which is where Step reads the outcome
// from; the error is for a run that could not be made at all. A Driver
// must return soon after ctx is done, leaving the turn open if it can
// (suspended) so another worker continues it. It is called from many
// goroutines at once, for different sessions.
type Driver interface {
	Drive(ctx context.Context, req *DriveRequest) error
}

// DriverFunc adapts a function to a Driver.
type DriverFunc func(ctx context.Context, req *DriveRequest) error

// Drive calls f.
func (f DriverFunc) Drive(ctx context.Context, req *DriveRequest) error { return f(ctx, req) }

// SubmitRequest is one call of Engine.Submit.
type SubmitRequest struct {
	// Queue is the queue's name; empty is the engine's default queue.
	Queue string
	// ID names the turn in the engine; empty lets the engine choose. A
	// turn submitted twice with one ID runs once.
	ID   string
	Turn Turn
}

// Engine runs turns durably: a submitted turn runs on a worker of its
// queue, and a turn whose worker died is finished by another. The engine
// keeps the queue and the execution record; the session log keeps the
// turn (see Step).
//
// An Engine is safe for concurrent use. Close stops its workers, leaving
// the turns they were driving to be finished by other workers (or by
// this one's next start), and releases its connections; it is
// idempotent.
type Engine interface {
	// Submit queues req.Turn and returns its id at once.
	Submit(ctx context.Context, req *SubmitRequest) (string, error)
	// Wait blocks until turn id has ended and returns its outcome.
	Wait(ctx context.Context, id string) (*Outcome, error)
	Close() error
}

// ErrStillOpen is returned by Step when the Driver returned but the turn
// is still open on the log: the run was suspended or stopped before its
// end, so the turn must be driven again (by this worker or another).
var ErrStillOpen = errors.New("durable: the turn is still open after its run (suspended or stopped); it will be continued")

// Holder is what a session store that leases sessions offers a worker
// (session/postgres does): Hold takes the lease of a session before the
// turn is driven, so others see at once who drives it; Release gives it
// up after; Held says whether another live process holds it, so a turn
// whose worker died can be taken over.
type Holder interface {
	Hold(ctx context.Context, id session.ID) error
	Release(ctx context.Context, id session.ID) error
	Held(ctx context.Context, id session.ID) (bool, error)
}
