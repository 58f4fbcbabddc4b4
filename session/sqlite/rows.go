package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/reinhq/rein/session"
)

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// eventsQuery reads each event as one blob: its seq, its time and the
// byte lengths of its five header strings, in decimal and each followed
// by a comma, then those strings and its data, back to back. The driver
// makes a new Go value of every column of every row, at a cost in time
// and allocations that was most of a read; one column makes it one.
const eventsQuery = `SELECT CAST(printf('%d,%d,%d,%d,%d,%d,%d,', seq, time,
		octet_length(type), octet_length(turn), octet_length(run), octet_length(parent_run), octet_length(agent))
	|| type || turn || run || parent_run || agent || data AS BLOB)
	FROM events WHERE session = ? AND seq > ? ORDER BY seq`

// query yields the events of id with seq > afterSeq.
func (s *Store) query(ctx context.Context, q querier, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		rows, err := q.QueryContext(ctx, eventsQuery, string(id), afterSeq)
		if err != nil {
			yield(session.Event{}, fmt.Errorf("sqlite: read session %q: %w", id, err))
			return
		}
		defer rows.Close()
		var (
			row sql.RawBytes
			d   rowDecoder
		)
		for rows.Next() {
			if err := rows.Scan(&row); err != nil {
				yield(session.Event{}, fmt.Errorf("sqlite: read session %q: %w", id, err))
				return
			}
			ev, err := d.decode(row)
			if err != nil {
				yield(session.Event{}, fmt.Errorf("sqlite: %s: session %q seq %d: %w", s.path, id, ev.Seq, err))
				return
			}
			ev.Session = id
			if !yield(ev, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(session.Event{}, fmt.Errorf("sqlite: read session %q: %w", id, err))
		}
	}
}

var errRow = errors.New("event row is malformed; the database was not written by this package")

// cut cuts a row of eventsQuery into its seq, its time, its five header
// strings (type, turn, run, parent_run, agent) and its data.
func cut(row []byte) (seq, t int64, f [6][]byte, err error) {
	var num [7]int64
	for k := range num {
		neg := len(row) > 0 && row[0] == '-'
		if neg {
			row = row[1:]
		}
		i := bytes.IndexByte(row, ',')
		if i <= 0 || i > 19 {
			return 0, 0, f, errRow
		}
		for _, c := range row[:i] {
			if c < '0' || c > '9' {
				return 0, 0, f, errRow
			}
			num[k] = num[k]*10 + int64(c-'0')
		}
		if neg {
			num[k] = -num[k]
		}
		row = row[i+1:]
	}
	for k, n := range num[2:] {
		if n < 0 || n > int64(len(row)) {
			return 0, 0, f, errRow
		}
		f[k], row = row[:n], row[n:]
	}
	f[5] = row
	return num[0], num[1], f, nil
}

// rowDecoder decodes the events of a query in order. It shares the
// header strings an event repeats from the one before, and the event
// types, so that a long log allocates them once per turn.
type rowDecoder struct {
	prev  [4]string // turn, run, parent_run and agent of the last event
	types map[string]string
}

// decode decodes one row of eventsQuery.
func (d *rowDecoder) decode(row []byte) (session.Event, error) {
	var (
		ev session.Event
		h  [4]string
	)
	seq, t, f, err := cut(row)
	if err != nil {
		return ev, err
	}
	ev.Seq, ev.Time = seq, time.Unix(0, t)
	for k := range h {
		if h[k] = d.prev[k]; h[k] != string(f[k+1]) {
			h[k] = string(f[k+1])
			d.prev[k] = h[k]
		}
	}
	ev.Turn, ev.Run, ev.ParentRun, ev.Agent = session.TurnID(h[0]), session.RunID(h[1]), session.RunID(h[2]), h[3]
	p, err := session.DecodePayload(d.typ(f[0]), f[5])
	if err != nil {
		return ev, err
	}
	ev.Data = p
	return ev, nil
}

// typ returns the event type b names, allocating each type once.
func (d *rowDecoder) typ(b []byte) string {
	if s, ok := d.types[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.types == nil {
		d.types = map[string]string{}
	}
	if len(d.types) < 64 {
		d.types[s] = s
	}
	return s
}
