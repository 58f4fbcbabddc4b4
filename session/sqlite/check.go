package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/reinhq/rein/session"
)

// check opens id for the first time in this Store, in one transaction:
// unless a live process holds the session's lock, it closes an open tail
// turn with session.RepairEvents, and if hold it takes the lock, which
// this Store keeps until Close or Delete. A lock held elsewhere is an
// error only if hold. st.mu must be held.
func (s *Store) check(ctx context.Context, id session.ID, st *state, hold bool) error {
	if st.held || (st.checked && !hold) {
		return nil
	}
	var (
		num, last int64
		repaired  []session.Event
	)
	err := s.write(ctx, true, true, func(c conn) error {
		var err error
		num, last, repaired, err = s.openTx(ctx, c, id, hold, true)
		return err
	})
	if errors.Is(err, errSkip) {
		return nil
	}
	if err != nil {
		if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrLocked) || errors.Is(err, session.ErrClosed) {
			return err
		}
		return fmt.Errorf("sqlite: open session %q: %w", id, err)
	}
	// Only the lock row may wait for the background sync: a repair is
	// durable before anyone reads it.
	if len(repaired) > 0 {
		if err := s.bg.Wait(ctx); err != nil {
			return err
		}
	}
	st.checked, st.held, st.num, st.lastSeq = true, hold, num, last
	return nil
}

// openTx is check's work in the write transaction in progress: it
// returns the session's number, its last seq and the events of its
// repair. A lock that a live Store holds is an error wrapping
// session.ErrLocked if hold, and errSkip if not. A lock that a process
// which died while appending left is repaired if repair is set, and
// errRepair if not.
func (s *Store) openTx(ctx context.Context, c conn, id session.ID, hold, repair bool) (num, last int64, repaired []session.Event, err error) {
	num, last, h, err := s.opening(ctx, id)
	if err != nil {
		return 0, 0, nil, err
	}
	if s.liveElsewhere(h) {
		if hold {
			return 0, 0, nil, fmt.Errorf("sqlite: session %q is held by %s; wait for it to finish or stop it: %w", id, h, session.ErrLocked)
		}
		return 0, 0, nil, errSkip
	}
	// A lock row left by another Store means its process died while
	// appending (a clean Close deletes it): close what it left open.
	// Without one, an open turn is one its writer meant to continue.
	if h.Owner != "" && h.Owner != s.owner {
		if !repair {
			return 0, 0, nil, errRepair
		}
		if repaired, err = s.repair(ctx, c, id, num, last); err != nil {
			return 0, 0, nil, err
		}
		if len(repaired) > 0 {
			last = repaired[len(repaired)-1].Seq
			s.log.Warn("sqlite: closed the turn a crashed process left open", "session", id, "holder", h.String(),
				"events", len(repaired), "last_seq", last)
		}
		if !hold {
			if _, err := c.ExecContext(ctx, `DELETE FROM locks WHERE session = ?`, string(id)); err != nil {
				return 0, 0, nil, err
			}
		}
	}
	if hold {
		if _, err := s.lockSes.ExecContext(ctx, string(id), s.owner, s.pid, s.host, s.start, s.now().UnixNano()); err != nil {
			return 0, 0, nil, err
		}
	}
	return num, last, repaired, nil
}

// errSkip says that a check without the lock found it held elsewhere,
// and errRepair that an open which was not to repair found something to.
var errSkip, errRepair = errors.New("skip"), errors.New("repair needed")

// openingQuery reads a session's number, its last seq and its lock row,
// if any.
const openingQuery = `SELECT num, ` + newestSeq + `, coalesce(locks.owner, ''), coalesce(locks.pid, 0),
	coalesce(locks.host, ''), coalesce(locks.started, 0), coalesce(locks.since, 0)
	FROM sessions LEFT JOIN locks ON locks.session = sessions.id WHERE sessions.id = ?`

// opening reads session id's number, its last seq and the holder of its
// lock, whose Owner is empty if nobody holds it, in the write
// transaction in progress.
func (s *Store) opening(ctx context.Context, id session.ID) (num, last int64, h holder, err error) {
	var since int64
	err = s.openSes.QueryRowContext(ctx, string(id)).Scan(&num, &last, &h.Owner, &h.PID, &h.Host, &h.Started, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, h, fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
	}
	h.Since = time.Unix(0, since)
	return num, last, h, err
}

// liveElsewhere reports whether h, the holder of a lock (none if its
// Owner is empty), is another Store that is still alive: one of this
// process, or a live process.
func (s *Store) liveElsewhere(h holder) bool {
	if h.Owner == "" || h.Owner == s.owner {
		return false
	}
	if h.PID == s.pid && h.Host == s.host {
		return true // another Store of this process
	}
	return alive(h, s.host)
}

// repair closes the turns left open at the end of id's log; num is the
// session's number and last its last seq. It returns the events it
// appended.
func (s *Store) repair(ctx context.Context, c conn, id session.ID, num, last int64) ([]session.Event, error) {
	// A lane (a child run's own, or the session's top level) is open when
	// its newest turn boundary is a start; the tail to repair begins at
	// the oldest such start.
	var from sql.NullInt64
	after, before := keysOf(num)
	err := c.QueryRowContext(ctx, `SELECT min(opened) FROM (
		SELECT max(CASE WHEN type = 'turn.start' THEN seq END) AS opened,
			max(CASE WHEN type = 'turn.end' THEN seq END) AS closed
		FROM events WHERE key > ? AND key < ? AND type IN ('turn.start', 'turn.end')
		GROUP BY CASE WHEN parent_run != '' THEN run ELSE '' END)
		WHERE opened > coalesce(closed, 0)`, after, before).Scan(&from)
	if err != nil || !from.Valid {
		return nil, err
	}
	var tail []session.Event
	err = c.Raw(func(dc any) error {
		q, err := queryer(dc)
		if err != nil {
			return err
		}
		var rerr error
		s.yieldQuery(ctx, q, id, num, from.Int64-1, math.MaxInt64, func(ev session.Event, err error) bool {
			if err != nil {
				rerr = err
				return false
			}
			tail = append(tail, ev)
			return true
		})
		return rerr
	})
	if err != nil {
		return nil, err
	}
	fix := session.RepairEvents(tail, s.now())
	if len(fix) == 0 {
		return nil, nil
	}
	for i := range fix {
		fix[i].Session = id
	}
	if err := s.insert(ctx, id, num, last, fix); err != nil {
		return nil, err
	}
	return fix, nil
}
