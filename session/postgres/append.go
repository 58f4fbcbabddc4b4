package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/session"
)

// insertEvents writes a batch: $1 is the session, $2 to $9 the columns.
const insertEvents = `INSERT INTO events (session, seq, time, type, turn, run, parent_run, agent, event)
	SELECT $1, u.seq, u.time, u.type, u.turn, u.run, u.parent_run, u.agent, u.event::json
	FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
		AS u(seq, time, type, turn, run, parent_run, agent, event)`

// appendEvents is an Append in one statement: it renews the lease of
// owner $13 (the fence: without it nothing is written), moves last_seq
// from $10 to $11, inserts the batch and notifies followers with
// payload $15. It returns how many of those happened and the session's
// last seq before it ran (null for a missing session).
//
// It locks the session's row before the lease's, in the order a Store
// taking the lease does, so the two never deadlock.
const appendEvents = `WITH row AS (
	SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE
), lease AS (
	UPDATE leases SET expires = now() + $12::interval
	WHERE session = $1 AND owner = $13 AND EXISTS (SELECT 1 FROM row) RETURNING 1
), sess AS (
	UPDATE sessions SET last_seq = $11, updated = $14
	WHERE id = $1 AND last_seq = $10 AND EXISTS (SELECT 1 FROM lease) RETURNING 1
), ins AS (
	` + insertEvents + `
	WHERE EXISTS (SELECT 1 FROM sess) RETURNING 1
), note AS (
	SELECT pg_notify('` + channel + `', $15) WHERE EXISTS (SELECT 1 FROM ins)
)
SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM sess), (SELECT count(*) FROM note),
	(SELECT last_seq FROM sessions WHERE id = $1)`

// columns are a batch of events as the arrays insertEvents takes.
type columns struct {
	seq, time                            []int64
	typ, turn, run, parentRun, agent, ev []string
}

// encode checks events as an append after last and lays them out as
// columns, each event's JSON stamped with session id.
func encode(id session.ID, last int64, events []session.Event) (*columns, error) {
	if err := session.CheckAppend(id, last, events); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	n := len(events)
	c := &columns{
		seq: make([]int64, n), time: make([]int64, n),
		typ: make([]string, n), turn: make([]string, n), run: make([]string, n),
		parentRun: make([]string, n), agent: make([]string, n), ev: make([]string, n),
	}
	var buf []byte
	for i, e := range events {
		e.Session = id
		var err error
		if buf, err = session.AppendEventJSON(buf[:0], e); err != nil {
			return nil, fmt.Errorf("postgres: append to %q: event seq %d: %w", id, e.Seq, err)
		}
		c.seq[i], c.time[i] = e.Seq, e.Time.UnixNano()
		c.typ[i], c.turn[i], c.run[i] = e.Data.EventType(), string(e.Turn), string(e.Run)
		c.parentRun[i], c.agent[i], c.ev[i] = string(e.ParentRun), e.Agent, string(buf)
	}
	return c, nil
}

func (c *columns) args(id session.ID) []any {
	return []any{string(id), c.seq, c.time, c.typ, c.turn, c.run, c.parentRun, c.agent, c.ev}
}

// insert writes events after last in tx, checking seqs, and moves the
// session's last seq; a repair uses it.
func (s *Store) insert(ctx context.Context, tx pgx.Tx, id session.ID, last int64, events []session.Event) error {
	c, err := encode(id, last, events)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertEvents, c.args(id)...); err != nil {
		return err
	}
	end := events[len(events)-1]
	_, err = tx.Exec(ctx, `UPDATE sessions SET last_seq = $2, updated = $3 WHERE id = $1`, string(id), end.Seq, end.Time.UnixNano())
	return err
}

// Append writes events to session id in one transaction, one round trip
// to the server. The first event's seq must follow the session's last;
// see session.Store. The first Append of a session in this Store takes
// its lease (a *LeaseError if another live Store holds it), which this
// Store renews until Close or Delete; every Append checks, in its
// transaction, that the lease is still this Store's.
func (s *Store) Append(ctx context.Context, id session.ID, events ...session.Event) error {
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
	if !st.held {
		if err := s.take(ctx, id, st, true); err != nil {
			return err
		}
	}
	c, err := encode(id, st.lastSeq, events)
	if err != nil {
		return err
	}
	end := events[len(events)-1]
	b := &pgx.Batch{}
	if !sync {
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	b.Queue(appendEvents, append(c.args(id), st.lastSeq, end.Seq, s.ttl, s.owner, end.Time.UnixNano(), s.schema+"/"+string(id))...)
	var (
		leased, moved, noted int64
		before               *int64
	)
	br := s.pool.SendBatch(ctx, b)
	if !sync {
		if _, err = br.Exec(); err != nil {
			br.Close()
			return s.wrap(fmt.Sprintf("append to %q", id), err)
		}
	}
	err = br.QueryRow().Scan(&leased, &moved, &noted, &before)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case pgCode(err) == "23505":
		return fmt.Errorf("postgres: append to %q: a seq from %d on exists: %w", id, events[0].Seq, session.ErrSeqConflict)
	case err != nil:
		return s.wrap(fmt.Sprintf("append to %q", id), err)
	case before == nil:
		s.drop(st)
		return fmt.Errorf("postgres: append to %q: %w", id, session.ErrNotFound)
	case leased == 0:
		s.drop(st)
		return &LeaseError{Session: id, Op: "append", Lost: true}
	case moved == 0:
		return fmt.Errorf("postgres: append to %q: the session's last seq is %d, not %d: %w", id, *before, st.lastSeq, session.ErrSeqConflict)
	}
	st.lastSeq = end.Seq
	s.subs.Notify(id)
	return nil
}

// drop forgets that this Store holds the lease of st's session.
func (s *Store) drop(st *state) {
	if st.held {
		s.held.Add(-1)
	}
	st.held, st.checked = false, false
}
