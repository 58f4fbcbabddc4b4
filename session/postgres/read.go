package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/session"
)

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// query yields the events of id with seq > afterSeq, each decoded once
// from the JSON the server sends.
func (s *Store) query(ctx context.Context, q querier, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		rows, err := q.Query(ctx, `SELECT seq, event FROM events WHERE session = $1 AND seq > $2 ORDER BY seq`, string(id), afterSeq)
		if err != nil {
			yield(session.Event{}, s.wrap(fmt.Sprintf("read session %q", id), err))
			return
		}
		defer rows.Close()
		var dec session.Decoder
		for rows.Next() {
			raw := rows.RawValues()
			ev, err := dec.Decode(raw[1])
			if err != nil {
				yield(session.Event{}, fmt.Errorf("postgres: session %q: event %s: %w", id, raw[0], err))
				return
			}
			ev.Session = id
			if !yield(ev, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(session.Event{}, s.wrap(fmt.Sprintf("read session %q", id), err))
		}
	}
}

// Events yields the events of session id with seq > afterSeq. The first
// read of a session in this Store closes an open tail turn left by a
// holder that died.
func (s *Store) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		if err := s.checkRead(ctx, id); err != nil {
			yield(session.Event{}, err)
			return
		}
		n := 0
		for ev, err := range s.query(ctx, s.pool, id, afterSeq) {
			n++
			if !yield(ev, err) || err != nil {
				return
			}
		}
		if n > 0 {
			return
		}
		// Nothing after afterSeq: say whether the session is there at all.
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1`, string(id)).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			yield(session.Event{}, fmt.Errorf("postgres: session %q: %w", id, session.ErrNotFound))
		} else if err != nil {
			yield(session.Event{}, s.wrap(fmt.Sprintf("read session %q", id), err))
		}
	}
}
