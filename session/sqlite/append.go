package sqlite

import (
	"context"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/session"
)

// insert writes events after last, checking seqs, and updates the
// session row, in the write transaction in progress.
func (s *Store) insert(ctx context.Context, id session.ID, last int64, events []session.Event) error {
	if err := session.CheckAppend(id, last, events); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.record(ctx, id, events, true)
}

// Append writes events to session id in one transaction. The first event's
// seq must follow the session's last; see session.Store. The first Append
// of a session takes its lock, which this Store holds until Close or Delete.
func (s *Store) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	return s.append(ctx, id, events, false)
}

// append is Append, with the sync of the write-ahead log in the
// background if async.
func (s *Store) append(ctx context.Context, id session.ID, events []session.Event, async bool) error {
	if len(events) == 0 {
		return nil
	}
	sync := s.opts.Durability.Syncs(events)
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.check(ctx, id, st, true); err != nil {
		return err
	}
	if err := s.bg.Err(); err != nil {
		return err
	}
	if err := session.CheckAppend(id, st.lastSeq, events); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	err = s.commit(ctx, sync, async, func() error {
		return s.appendTx(ctx, id, events)
	})
	if err != nil {
		if errors.Is(err, session.ErrSeqConflict) || errors.Is(err, session.ErrClosed) {
			return err
		}
		if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return fmt.Errorf("sqlite: append to %q: %w", id, session.ErrNotFound)
		}
		return fmt.Errorf("sqlite: append to %q: %w", id, err)
	}
	st.lastSeq = events[len(events)-1].Seq
	s.subs.Notify(id)
	return nil
}
