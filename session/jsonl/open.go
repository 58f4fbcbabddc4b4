package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/reinhq/rein/session"
)

// check opens st for the first time in this Store: under the session's
// lock it cuts an uncommitted tail and closes an open tail turn with
// session.RepairEvents. If hold, the lock is kept for appending;
// otherwise it is released, and a lock held elsewhere (a live appender,
// whose tail is not a crash) just skips the check. st.mu must be held.
//
// If keep is not nil, the scan keeps the events it decodes in it.
func (s *Store) check(ctx context.Context, st *state, hold bool, keep *keeper) error {
	if !s.scans(st, hold) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, stale, err := s.takeLock(ctx, st.id, hold)
	if err != nil {
		if !hold && errors.Is(err, session.ErrLocked) {
			return nil
		}
		return err
	}
	if err := s.prepare(st, f, stale, keep); err != nil {
		if stale != nil {
			f.Close() // the record of the crash stays for the next open
		} else {
			unlockSession(f, s.lockPath(st.id))
		}
		return err
	}
	st.checked = true
	if !hold {
		return unlockSession(f, s.lockPath(st.id))
	}
	st.f = f
	st.held.Store(true)
	return nil
}

// scans reports whether check would scan st's file.
func (s *Store) scans(st *state, hold bool) bool {
	return st.f == nil && (!st.checked || hold) && !s.opts.ReadOnly
}

// takeLock takes the append lock of id and returns the session's file,
// open for appending, that holds it. A lock held only briefly (by
// another Store checking the session) is waited for, up to half a second.
// A lock held for appending (hold) records this process as its holder.
func (s *Store) takeLock(ctx context.Context, id session.ID, hold bool) (*os.File, *holder, error) {
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		lock, stale, err := lockSession(s.Path(id), s.lockPath(id), id, s.now(), hold)
		if err == nil || !errors.Is(err, session.ErrLocked) || !hold || time.Now().After(deadline) {
			return lock, stale, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// prepare scans the file and truncates an uncommitted tail. If stale
// names a process that died while appending, it also closes the turns
// that process left open. The caller holds the session's lock.
func (s *Store) prepare(st *state, f *os.File, stale *holder, keep *keeper) error {
	name := f.Name()
	sc, err := scanFile(f, name, keep)
	if err != nil {
		return err
	}
	if sc.torn {
		fi, _ := f.Stat()
		var dropped int64
		if fi != nil {
			dropped = fi.Size() - sc.end
		}
		if err := f.Truncate(sc.end); err != nil {
			return fmt.Errorf("jsonl: %s: cut uncommitted tail: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("jsonl: %s: cut uncommitted tail: %w", name, err)
		}
		s.log.Warn("jsonl: dropped an uncommitted tail", "session", st.id, "file", name, "bytes", dropped, "last_seq", sc.lastSeq)
	}
	st.hdr = sc.hdr
	st.lastSeq = sc.lastSeq
	st.size.Store(sc.end)

	// Decode the tail turn (everything after the last turn.end) to see
	// whether it is open.
	var tail []session.Event
	lr := newLineReader(io.NewSectionReader(f, sc.tailOff, sc.end-sc.tailOff), sc.tailOff, sc.tailLine-1)
	var dec lineDecoder
	for {
		line, complete, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		if !complete {
			break
		}
		if tail, err = dec.decodeLine(tail, line); err != nil {
			return fmt.Errorf("jsonl: %s line %d: %v: %w", name, lr.line, err, session.ErrCorrupt)
		}
	}
	st.updated = sc.hdr.Created
	if len(tail) > 0 {
		st.updated = tail[len(tail)-1].Time
	} else if sc.lastSeq > 0 {
		if _, t, ok := s.lastEvent(f, sc.end); ok {
			st.updated = t
		}
	}
	if stale == nil {
		// The last appender closed its Store cleanly: an open turn is one
		// it meant to continue, not a crash.
		return nil
	}
	fix := repairTail(tail, s.now())
	if len(fix) == 0 {
		return nil
	}
	for i := range fix {
		if fix[i].Session == "" {
			fix[i].Session = st.id
		}
	}
	if fix[0].Seq != st.lastSeq+1 {
		return fmt.Errorf("jsonl: %s: repair starts at seq %d, want %d", name, fix[0].Seq, st.lastSeq+1)
	}
	if err := s.write(st, f, fix, true, false); err != nil {
		return fmt.Errorf("jsonl: %s: close the open tail turn: %w", name, err)
	}
	s.log.Warn("jsonl: closed the turn a crashed process left open", "session", st.id, "file", name,
		"holder", stale.String(), "events", len(fix), "last_seq", st.lastSeq)
	return nil
}
