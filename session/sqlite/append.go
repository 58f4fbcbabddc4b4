package sqlite

import (
	"context"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/session"
)

// insert writes events after last to session id, numbered num,
// checking seqs, and updates the session row, in the write transaction
// in progress.
func (s *Store) insert(ctx context.Context, id session.ID, num, last int64, events []session.Event) error {
	if err := session.CheckAppend(id, last, events); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.record(ctx, id, num, events, true)
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
	if err := s.bg.Err(); err != nil {
		return err
	}
	if st.held {
		err = s.commitBatch(ctx, id, st, events, sync, async)
	} else if err = s.openAppend(ctx, id, st, events, sync, async); errors.Is(err, errRepair) {
		// What the open found to repair is repaired in a transaction of
		// its own, which stays if the batch does not follow it.
		if err = s.check(ctx, id, st, true); err == nil {
			err = s.commitBatch(ctx, id, st, events, sync, async)
		}
	}
	if err != nil {
		if errors.Is(err, session.ErrSeqConflict) || errors.Is(err, session.ErrClosed) ||
			errors.Is(err, session.ErrLocked) || errors.Is(err, session.ErrNotFound) {
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

// commitBatch commits events, which must follow st's last seq, to a
// session this Store holds.
func (s *Store) commitBatch(ctx context.Context, id session.ID, st *state, events []session.Event, sync, async bool) error {
	if err := session.CheckAppend(id, st.lastSeq, events); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.commit(ctx, sync, async, func() error { return s.appendTx(ctx, id, st.num, events) })
}

// openAppend is the first append of a session in this Store: one
// transaction opens it, takes its lock and writes events, so a new
// session's lock costs no commit of its own. If a process that died
// while appending left the lock, it writes nothing and returns
// errRepair, for check to repair first.
func (s *Store) openAppend(ctx context.Context, id session.ID, st *state, events []session.Event, sync, async bool) error {
	var num int64
	err := s.commit(ctx, sync, async, func() error {
		return s.inTx(ctx, func() error {
			var (
				last int64
				err  error
			)
			num, last, _, err = s.openTx(ctx, s.w, id, true, false)
			if err != nil {
				return err
			}
			if err := session.CheckAppend(id, last, events); err != nil {
				return fmt.Errorf("sqlite: %w", err)
			}
			return s.record(ctx, id, num, events, endsTurn(events))
		})
	})
	if err == nil {
		st.checked, st.held, st.num = true, true, num
	}
	return err
}
