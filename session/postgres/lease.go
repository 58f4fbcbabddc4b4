package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/internal/proc"
)

// Lease is a row of the leases table: which Store may append to a
// session, until when. The holder renews it while it runs; a lease is
// held while it has not expired, its holder's own connection to the
// server is open and, where this process can see the holder's pids (same
// machine boot and pid namespace), its process runs.
type Lease struct {
	Owner   string    // random token of the holding Store
	PID     int       // the holder's process
	Host    string    // the holder's host name
	Space   string    // the holder's pid space (see alive), "" if unknown
	Started int64     // the holder's process start time, 0 if unknown
	Since   time.Time // when the holder took the lease
	Expires time.Time // when the lease ends unless renewed
	// Live says the lease had not expired and its holder's connection
	// was open when it was read.
	Live bool
}

// String names the holder: its process, host and since when.
func (l Lease) String() string {
	return fmt.Sprintf("pid %d on host %s since %s", l.PID, l.Host, l.Since.Format(time.RFC3339))
}

// LeaseError is the error of a Store that may not append to (or delete)
// a session because another Store holds its lease, or because this
// Store's lease was taken over after it expired. It wraps
// session.ErrLocked.
type LeaseError struct {
	Session session.ID
	Holder  Lease  // who holds the lease, as far as is known
	Op      string // "append" or "delete"
	// Lost says this Store held the lease and lost it: it was not renewed
	// in time (a stalled process or a lost connection) and another Store
	// took it over, so the session may have moved on.
	Lost bool
}

// Error says who holds the session, or that the lease was lost.
func (e *LeaseError) Error() string {
	if e.Lost {
		return fmt.Sprintf("postgres: %s %q: this process's lease expired and was taken over; reopen the session to see what was appended since", e.Op, e.Session)
	}
	return fmt.Sprintf("postgres: %s %q: the session is held by %s; wait for it to finish or stop it (a holder that dies loses it at once, one that stops answering when its lease expires at %s)",
		e.Op, e.Session, e.Holder, e.Holder.Expires.Format(time.RFC3339))
}

// Unwrap returns session.ErrLocked.
func (e *LeaseError) Unwrap() error { return session.ErrLocked }

// backend names the server process of the Store's own connection; a
// lease records it, so other Stores see at once when the connection
// closes.
type backend struct {
	pid   uint32
	start *time.Time // nil where the server does not say
}

// lockSession locks the row of session id for the rest of tx and returns
// its last seq; two Stores taking one session's lease queue here.
func (s *Store) lockSession(ctx context.Context, tx pgx.Tx, id session.ID) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1 FOR UPDATE`, string(id)).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("postgres: session %q: %w", id, session.ErrNotFound)
	}
	return last, err
}

// leaseOf reads the lease of id, or nil if there is none.
func (s *Store) leaseOf(ctx context.Context, q querier, id session.ID) (*Lease, error) {
	var l Lease
	err := q.QueryRow(ctx, `SELECT owner, pid, host, space, started, since, expires,
		expires > now() AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.backend
			AND (a.backend_start = l.backend_start OR a.backend_start IS NULL OR l.backend_start IS NULL))
		FROM leases l WHERE session = $1`, string(id)).
		Scan(&l.Owner, &l.PID, &l.Host, &l.Space, &l.Started, &l.Since, &l.Expires, &l.Live)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// alive reports whether the holder of l may still append: its lease is
// live and, if this process sees the holder's pids, its process runs
// (which is known at once after a kill, before the server notices the
// closed connection). The host name does not decide that: containers
// may share one, each with pids of its own.
func (s *Store) alive(l *Lease) bool {
	if !l.Live {
		return false
	}
	if l.Space != "" && l.Space == s.space && l.PID != s.pid {
		return proc.Alive(l.PID, l.Started)
	}
	return true
}

// checkRead opens id for reading the first time this Store reads it: a
// lease left by a holder that died means that holder stopped in the
// middle of appending, so the turns it left open are closed (with the
// events of session.RepairEvents) and the lease dropped. An open turn of
// a session without a lease is left for its writer to continue.
func (s *Store) checkRead(ctx context.Context, id session.ID) error {
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.checked || st.held {
		return nil
	}
	l, err := s.leaseOf(ctx, s.pool, id)
	if err != nil {
		return s.wrap(fmt.Sprintf("open session %q", id), err)
	}
	switch {
	case l == nil || l.Owner == s.owner:
		st.checked = true
	case !s.alive(l):
		return s.take(ctx, id, st, false)
	}
	// A live holder may yet die: look again at the next read.
	return nil
}

// take runs, in one transaction, what the first append (hold) or a read
// of a session with a stale lease does: it fails with a *LeaseError if a
// live Store holds the lease; if a dead one held it, it closes the turns
// that one left open; then it takes the lease if hold, else drops the
// stale one. st.mu must be held.
func (s *Store) take(ctx context.Context, id session.ID, st *state, hold bool) error {
	var repaired []session.Event
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		repaired = nil
		last, err := s.lockSession(ctx, tx, id)
		if err != nil {
			return err
		}
		l, err := s.leaseOf(ctx, tx, id)
		if err != nil {
			return err
		}
		if l != nil && l.Owner != s.owner {
			if s.alive(l) {
				if !hold {
					return errSkip // a reader leaves a live writer alone
				}
				return &LeaseError{Session: id, Holder: *l, Op: "append"}
			}
			if !s.opts.KeepOpenTurns { // else left for a durable resume
				if repaired, err = s.repair(ctx, tx, id, last); err != nil {
					return err
				}
			}
			if len(repaired) > 0 {
				last = repaired[len(repaired)-1].Seq
			}
			if !hold {
				if _, err := tx.Exec(ctx, `DELETE FROM leases WHERE session = $1`, string(id)); err != nil {
					return err
				}
			}
		}
		if hold {
			b := s.ident.Load()
			if _, err := tx.Exec(ctx, `INSERT INTO leases (session, owner, pid, host, space, started, backend, backend_start, since, expires)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now() + $9::interval)
				ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, pid = excluded.pid, host = excluded.host,
					space = excluded.space, started = excluded.started, backend = excluded.backend,
					backend_start = excluded.backend_start, since = excluded.since, expires = excluded.expires`,
				string(id), s.owner, s.pid, s.host, s.space, s.start, int64(b.pid), b.start, s.ttl); err != nil {
				return err
			}
		}
		st.lastSeq = last
		return nil
	})
	if errors.Is(err, errSkip) {
		return nil
	}
	if err != nil {
		if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrLocked) {
			return err
		}
		return s.wrap(fmt.Sprintf("open session %q", id), err)
	}
	if len(repaired) > 0 {
		s.log.Warn("postgres: closed the turn a crashed process left open", "session", id,
			"events", len(repaired), "last_seq", st.lastSeq)
		s.subs.Notify(id)
	}
	st.checked = true
	if hold && !st.held {
		st.held = true
		s.held.Add(1)
	}
	return nil
}

var errSkip = errors.New("skip")

// openTurns finds, per lane (the main agent, and each subagent run), the
// last turn boundary, and returns the smallest seq of those that are a
// turn.start: where the turns left open begin. Zero means none is open.
const openTurns = `SELECT coalesce(min(seq), 0) FROM (
	SELECT DISTINCT ON (lane) seq, type FROM (
		SELECT seq, type, CASE WHEN parent_run = '' THEN '' ELSE run END AS lane
		FROM events WHERE session = $1 AND type IN ('turn.start', 'turn.end')
	) b ORDER BY lane, seq DESC
) last WHERE type = 'turn.start'`

// repair closes the turns left open at the end of id's log; last is the
// session's last seq. It returns the events it appended.
func (s *Store) repair(ctx context.Context, tx pgx.Tx, id session.ID, last int64) ([]session.Event, error) {
	var from int64
	if err := tx.QueryRow(ctx, openTurns, string(id)).Scan(&from); err != nil {
		return nil, err
	}
	if from == 0 {
		return nil, nil
	}
	var tail []session.Event
	for ev, err := range s.query(ctx, tx, id, from-1) {
		if err != nil {
			return nil, err
		}
		tail = append(tail, ev)
	}
	fix := session.RepairEvents(tail, s.now())
	if len(fix) == 0 {
		return nil, nil
	}
	if err := s.insert(ctx, tx, id, last, fix); err != nil {
		return nil, err
	}
	return fix, nil
}

// renew extends every lease this Store holds, through its own connection,
// and records that connection as the holder's.
func (s *Store) renew(ctx context.Context, conn *pgx.Conn) error {
	if s.held.Load() == 0 {
		return nil
	}
	_, err := conn.Exec(ctx, `UPDATE leases SET expires = now() + $2::interval, backend = pg_backend_pid(),
		backend_start = (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())
		WHERE owner = $1`, s.owner, s.ttl)
	return err
}
