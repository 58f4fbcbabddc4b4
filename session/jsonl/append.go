package jsonl

import (
	"context"
	"fmt"
	"os"

	"github.com/reinhq/rein/session"
)

// write appends events as one write, truncating a partial write away,
// and syncs them if forceSync or the durability setting says so: before
// it returns, or in the background if async. st.mu is held and st.size
// is the file's committed size.
func (s *Store) write(st *state, f *os.File, events []session.Event, forceSync, async bool) error {
	buf, err := encodeBatch(st.buf[:0], st.id, events)
	st.buf = buf[:0]
	if err != nil {
		return err
	}
	prev := st.size.Load()
	if _, err := f.Write(buf); err != nil {
		if terr := f.Truncate(prev); terr != nil {
			return fmt.Errorf("jsonl: append: %w (and cutting the partial write failed: %v; reopen the store to repair the file)", err, terr)
		}
		return fmt.Errorf("jsonl: append: %w", err)
	}
	size := prev + int64(len(buf))
	if sync := forceSync || s.needSync(events); sync && async {
		st.sync.Request(size, syncFile(f))
	} else if sync {
		if err := f.Sync(); err != nil {
			// The bytes may or may not be on disk; take them back so the
			// caller's retry does not duplicate them. Batches of
			// AppendAsync still waiting for a sync may be lost too.
			f.Truncate(prev)
			st.sync.Fail(syncFailed(f, err))
			return fmt.Errorf("jsonl: append: sync: %w", err)
		}
		st.sync.Synced(size)
	}
	last := &events[len(events)-1]
	st.lastSeq = last.Seq
	st.updated = last.Time
	st.size.Store(size)
	s.subs.Notify(st.id)
	if cap(st.buf) > 1<<20 {
		st.buf = nil // do not pin one huge batch's buffer
	}
	return nil
}

func (s *Store) needSync(events []session.Event) bool {
	return s.opts.Durability.Syncs(events)
}

// Append writes events to session id as one write. The first event's seq
// must follow the session's last; see session.Store. The first Append of
// a session takes its lock, which this Store holds until Close or Delete.
func (s *Store) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	return s.append(ctx, id, events, false)
}

// append is Append, with the sync in the background if async.
func (s *Store) append(ctx context.Context, id session.ID, events []session.Event, async bool) error {
	if err := s.writable("append"); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	if err := validID(id); err != nil {
		return err
	}
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.check(ctx, st, true, nil); err != nil {
		return err
	}
	if st.f == nil { // Closed or deleted meanwhile.
		return session.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := st.sync.Err(); err != nil {
		return fmt.Errorf("jsonl: session %q: %w", id, err)
	}
	if err := session.CheckAppend(id, st.lastSeq, events); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	if err := s.write(st, st.f, events, false, async); err != nil {
		return fmt.Errorf("jsonl: session %q: %w", id, err)
	}
	return nil
}
