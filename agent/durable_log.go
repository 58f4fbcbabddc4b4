package agent

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/session"
)

// openTurn follows the log's last turn while it is open: left by a crash
// (on a durable agent) or by a Suspend.
type openTurn struct {
	seq  int64 // the seq of its turn.start; 0 when no turn is open
	turn session.TurnID
}

// track follows one event written or read.
func (t *openTurn) track(ev *session.Event) {
	switch ev.Data.(type) {
	case *session.TurnStart:
		t.seq, t.turn = ev.Seq, ev.Turn
	case *session.TurnEnd:
		*t = openTurn{}
	}
}

// openEvents returns the events of the open turn, read back from the
// store (the turn's own, never the whole history), or nil when no turn is
// open.
func (w *logWriter) openEvents(ctx context.Context) ([]session.Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.openEventsLocked(ctx)
}

func (w *logWriter) openEventsLocked(ctx context.Context) ([]session.Event, error) {
	if w.tail.seq == 0 {
		return nil, nil
	}
	var events []session.Event
	for ev, err := range w.store.Events(ctx, w.sid, w.tail.seq-1) {
		if err != nil {
			return nil, fmt.Errorf("agent: read the open turn of session %s: %w", w.sid, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// closeOpen closes an open turn with recorded repairs, as New does when
// the agent is not durable: a Run, a manual compaction or an idle Inject
// that comes instead of a Resume gives up the open turn.
func (w *logWriter) closeOpen(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	events, err := w.openEventsLocked(ctx)
	if err != nil || len(events) == 0 {
		return err
	}
	if err := w.repairLocked(ctx, events); err != nil {
		return fmt.Errorf("agent: close the open turn of session %s: %w", w.sid, err)
	}
	return nil
}
