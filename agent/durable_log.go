package agent

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/session"
)

// openTurn follows the log's last turn: while it is open (left by a
// Suspend, or by a crash on a store that keeps it), and once a repair
// closed it as interrupted, until another turn starts.
type openTurn struct {
	seq    int64 // the seq of the open turn's turn.start; 0 when none is open
	turn   session.TurnID
	closed int64 // the seq of the turn.start of the last turn, when it ended interrupted
}

// track follows one event written or read.
func (t *openTurn) track(ev *session.Event) {
	switch d := ev.Data.(type) {
	case *session.TurnStart:
		t.seq, t.turn, t.closed = ev.Seq, ev.Turn, 0
	case *session.TurnEnd:
		closed := int64(0)
		if d.Reason == session.EndInterrupted {
			closed = t.seq
		}
		*t = openTurn{closed: closed}
	}
}

// openEvents returns the events of the open turn, read back from the
// store (the turn's own, never the whole history), or nil when no turn is
// open.
func (w *logWriter) openEvents(ctx context.Context) ([]session.Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.eventsFrom(ctx, w.tail.seq)
}

// resumable returns the events of the turn a Resume would continue: the
// open one (open true), else the last one when a repair closed it as
// interrupted; nil when there is neither.
func (w *logWriter) resumable(ctx context.Context) (events []session.Event, open bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tail.seq > 0 {
		events, err = w.eventsFrom(ctx, w.tail.seq)
		return events, true, err
	}
	events, err = w.eventsFrom(ctx, w.tail.closed)
	return events, false, err
}

// eventsFrom reads the events from seq on; nil for seq 0.
func (w *logWriter) eventsFrom(ctx context.Context, seq int64) ([]session.Event, error) {
	if seq == 0 {
		return nil, nil
	}
	events, err := session.Collect(w.store.Events(ctx, w.sid, seq-1))
	if err != nil {
		return nil, fmt.Errorf("agent: read the last turn of session %s: %w", w.sid, err)
	}
	return events, nil
}

// closeOpen closes an open turn with recorded repairs, as New does when
// the agent is not durable: a Run, a manual compaction or an idle Inject
// that comes instead of a Resume gives up the open turn.
func (w *logWriter) closeOpen(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	events, err := w.eventsFrom(ctx, w.tail.seq)
	if err != nil || len(events) == 0 {
		return err
	}
	if err := w.repairLocked(ctx, events); err != nil {
		return fmt.Errorf("agent: close the open turn of session %s: %w", w.sid, err)
	}
	return nil
}
