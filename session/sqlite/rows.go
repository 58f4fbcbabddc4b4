package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"runtime"
	"time"

	"github.com/reinhq/rein/session"
)

// eventsQuery reads an event's header strings and data as one blob,
// each string followed by a unit separator (0x1F). The driver makes a Go
// value of every column of every row, at a cost in time and allocations
// that was most of a read: three columns cost far less than eight, and
// numbers as columns less than numbers formatted into the blob. Valid
// JSON holds no raw 0x1F, so when the data part of a row does, a header
// string held one, and the row is read again by eventQuery.
const (
	eventsFrom = `SELECT key, time, CAST(type || char(31) || turn || char(31) || run || char(31) ||
	parent_run || char(31) || agent || char(31) || data AS BLOB)
	FROM events WHERE key > ? AND key < ?`
	eventsQuery = eventsFrom + ` ORDER BY key`
	// eventsToQuery bounds the read, for the first half of a long one;
	// the bound costs every other read a little.
	eventsToQuery = eventsFrom + ` AND key <= ? ORDER BY key`
)

// queryEvents starts a read through q, the driver's connection, of the
// events of the session numbered num with afterSeq < seq <= to (no bound
// when to is math.MaxInt64).
func queryEvents(ctx context.Context, q driver.QueryerContext, num, afterSeq, to int64) (driver.Rows, error) {
	afterSeq = min(max(afterSeq, 0), maxSeq) // within the session's keys
	_, before := keysOf(num)
	args := []driver.NamedValue{{Ordinal: 1, Value: eventKey(num, afterSeq)}, {Ordinal: 2, Value: before}}
	if to == math.MaxInt64 {
		return q.QueryContext(ctx, eventsQuery, args)
	}
	return q.QueryContext(ctx, eventsToQuery, append(args, driver.NamedValue{Ordinal: 3, Value: eventKey(num, min(to, maxSeq))}))
}

// eventQuery reads the time, the header strings and the data of one
// event apart.
const eventQuery = `SELECT time, type, turn, run, parent_run, agent, data FROM events WHERE key = ?`

// yieldRows decodes rows, a read of eventsQuery for session id, and
// yields their events in order, up to a row whose blob cannot be cut,
// whose seq it returns (0 if none) for the caller to read again. ok
// reports whether it yielded every row it did not leave: false if yield
// stopped it or was given an error.
func (s *Store) yieldRows(id session.ID, rows eventRows, yield func(session.Event, error) bool) (uncut int64, ok bool) {
	var (
		f       [6][]byte
		d       rowDecoder
		err     error
		stopped bool // yield returned false, or was given an error
	)
	// emit decodes a row and yields its event; false stops the read.
	emit := func(seq, t int64, row []byte) bool {
		if !split(&f, row) {
			uncut = seq
			return false
		}
		ev, err := s.decode(&d, &f, id, seq, t)
		stopped = !yield(ev, err) || err != nil
		return !stopped
	}
	for n := 1; ; n++ {
		seq, t, row, ok := rows.next()
		if !ok {
			err = rows.err()
			break
		}
		if !emit(seq, t, row) {
			break
		}
		if n == sequentialRows {
			err = prefetch(rows, emit)
			break
		}
	}
	if err != nil && !stopped {
		yield(session.Event{}, fmt.Errorf("sqlite: read session %q: %w", id, err))
	}
	return uncut, err == nil && !stopped
}

// eventAgain reads the event of id, numbered num, at seq column by
// column, through q, the driver's connection: its blob could not be cut
// for sure.
func (s *Store) eventAgain(ctx context.Context, q driver.QueryerContext, id session.ID, num, seq int64) (session.Event, error) {
	t, f, err := columns(ctx, q, num, seq)
	if err != nil {
		return session.Event{}, fmt.Errorf("sqlite: read session %q seq %d: %w", id, seq, err)
	}
	var d rowDecoder
	return s.decode(&d, &f, id, seq, t)
}

// columns reads the time, the header strings and the data of the event
// at seq of the session numbered num apart, through q, the driver's
// connection.
func columns(ctx context.Context, q driver.QueryerContext, num, seq int64) (t int64, f [6][]byte, err error) {
	var v [7]driver.Value
	if err := queryRow(ctx, q, v[:], eventQuery, eventKey(num, seq)); err != nil {
		return 0, f, err
	}
	t, ok := v[0].(int64)
	for k := range f {
		switch c := v[k+1].(type) {
		case string:
			f[k] = []byte(c)
		case []byte:
			f[k] = c
		default:
			ok = false
		}
	}
	if !ok {
		return 0, f, fmt.Errorf("a row of unexpected types %T, %T, %T, %T, %T, %T, %T", v[0], v[1], v[2], v[3], v[4], v[5], v[6])
	}
	return t, f, nil
}

// decode decodes the event of id at seq, with time t, from its header
// strings and data, naming the database in an error.
func (s *Store) decode(d *rowDecoder, f *[6][]byte, id session.ID, seq, t int64) (session.Event, error) {
	ev, err := d.event(f, id, seq, t)
	if err != nil {
		return ev, fmt.Errorf("sqlite: %s: %w", s.path, err)
	}
	return ev, nil
}

// Events yields the events of session id with seq > afterSeq. The first
// read of a session in this Store closes an open tail turn left by a
// crashed process.
func (s *Store) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		st, err := s.get(id)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		st.mu.Lock()
		err = s.check(ctx, id, st, false)
		st.mu.Unlock()
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		if err = s.readable(); err == nil {
			var c *sql.Conn
			if c, err = s.db.Conn(ctx); err == nil {
				defer c.Close()
				err = c.Raw(func(dc any) error { return s.read(ctx, dc, id, afterSeq, yield) })
			}
		}
		if err != nil {
			if !errors.Is(err, session.ErrNotFound) {
				err = fmt.Errorf("sqlite: read session %q: %w", id, err)
			}
			yield(session.Event{}, err)
		}
	}
}

// read yields the events of id with seq > afterSeq from one read
// transaction on dc, the driver's connection, so that the session row
// and its events agree; a long read takes its second half from a read
// ahead (see ahead), checked against this transaction. An error it
// returns was not yielded: the transaction did not start, or the session
// is not there.
func (s *Store) read(ctx context.Context, dc any, id session.ID, afterSeq int64, yield func(session.Event, error) bool) error {
	q, tx, err := beginRead(ctx, dc)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	num, last, err := sessionRow(ctx, q, id)
	if err != nil {
		return err
	}
	to := int64(math.MaxInt64)
	var a *ahead
	if last-afterSeq >= aheadRows && runtime.GOMAXPROCS(0) > 1 {
		to = afterSeq + (last-afterSeq)/2
		a = s.readAhead(ctx, id, num, to, last-to)
		defer a.close()
	}
	if s.yieldQuery(ctx, q, id, num, afterSeq, to, yield) && a != nil {
		s.yieldAhead(ctx, q, id, num, a, to, yield)
	}
	return nil
}

// beginRead begins a read transaction on dc, the driver's connection,
// and returns what runs its queries.
func beginRead(ctx context.Context, dc any) (driver.QueryerContext, driver.Tx, error) {
	q, err := queryer(dc)
	if err != nil {
		return nil, nil, err
	}
	b, ok := dc.(driver.ConnBeginTx)
	if !ok {
		return nil, nil, fmt.Errorf("the driver's connection %T cannot begin a transaction", dc)
	}
	tx, err := b.BeginTx(ctx, driver.TxOptions{ReadOnly: true})
	return q, tx, err
}

// sessionRow returns the number of session id, which its events' keys
// hold, and the last seq its row holds, as of its last turn's end (see
// newestSeq): a lower bound of its last event's, enough to tell a long
// read. The newest event's seq would cost every read, a follower's tail
// included, a subquery compiled each time (13 µs of a 60 µs tail read).
// It returns an error wrapping session.ErrNotFound if there is no such
// session.
func sessionRow(ctx context.Context, q driver.QueryerContext, id session.ID) (num, last int64, err error) {
	var v [2]driver.Value
	if err := queryRow(ctx, q, v[:], `SELECT num, last_seq FROM sessions WHERE id = ?`, string(id)); err == io.EOF {
		return 0, 0, fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
	} else if err != nil {
		return 0, 0, err
	}
	num, ok1 := v[0].(int64)
	last, ok2 := v[1].(int64)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("sqlite: session %q: a row of unexpected types %T, %T", id, v[0], v[1])
	}
	return num, last, nil
}

// queryRow runs query with args through q, the driver's connection, and
// reads its first row into dest: io.EOF if it has none.
func queryRow(ctx context.Context, q driver.QueryerContext, dest []driver.Value, query string, args ...any) error {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	rows, err := q.QueryContext(ctx, query, named)
	if err != nil {
		return err
	}
	defer rows.Close()
	return rows.Next(dest)
}

// queryer returns dc, the driver's connection, as what runs queries.
func queryer(dc any) (driver.QueryerContext, error) {
	q, ok := dc.(driver.QueryerContext)
	if !ok {
		return nil, fmt.Errorf("the driver's connection %T cannot run a query", dc)
	}
	return q, nil
}

// yieldQuery reads the events of id, numbered num, with afterSeq < seq <=
// to through q, the driver's connection, and yields them, errors
// included. A row whose blob cannot be cut ends the statement; it is
// read again on the same connection, free once the statement's rows are
// closed (a long read steps them on a goroutine), and the read goes on
// after it. It reports whether it yielded every one (see yieldRows).
func (s *Store) yieldQuery(ctx context.Context, q driver.QueryerContext, id session.ID, num, afterSeq, to int64, yield func(session.Event, error) bool) bool {
	for {
		rows, err := queryEvents(ctx, q, num, afterSeq, to)
		if err != nil {
			yield(session.Event{}, fmt.Errorf("sqlite: read session %q: %w", id, err))
			return false
		}
		uncut, ok := s.yieldRows(id, &driverRows{ctx: ctx, rows: rows}, yield)
		rows.Close()
		if !ok || uncut == 0 {
			return ok
		}
		ev, err := s.eventAgain(ctx, q, id, num, uncut)
		if !yield(ev, err) || err != nil {
			return false
		}
		afterSeq = uncut
	}
}

// split cuts a row's blob of eventsQuery into the five header strings
// (type, turn, run, parent_run, agent) and the data. It reports false
// if the cut is not sure: a header string held a separator.
func split(f *[6][]byte, row []byte) bool {
	for k := range 5 {
		i := bytes.IndexByte(row, 0x1F)
		if i < 0 {
			return false
		}
		f[k], row = row[:i], row[i+1:]
	}
	f[5] = row
	return bytes.IndexByte(row, 0x1F) < 0
}

// rowDecoder decodes the events of a query in order. It shares the
// header strings an event repeats from the one before and the event
// types, so that a long log allocates them once per turn, and through
// its session.Decoder the tool names and call IDs.
type rowDecoder struct {
	prev  [4]string // turn, run, parent_run and agent of the last event
	types map[string]string
	dec   session.Decoder
}

// decode decodes an event's header strings and data, as split cuts
// them; it leaves seq, time and session to the caller.
func (d *rowDecoder) decode(f *[6][]byte) (session.Event, error) {
	var (
		ev session.Event
		h  [4]string
	)
	for k := range h {
		if h[k] = d.prev[k]; h[k] != string(f[k+1]) {
			h[k] = string(f[k+1])
			d.prev[k] = h[k]
		}
	}
	ev.Turn, ev.Run, ev.ParentRun, ev.Agent = session.TurnID(h[0]), session.RunID(h[1]), session.RunID(h[2]), h[3]
	p, err := d.dec.DecodePayload(d.typ(f[0]), f[5])
	if err != nil {
		return ev, err
	}
	ev.Data = p
	return ev, nil
}

// event decodes the event of session id with seq and time t (unix
// nanoseconds) from its header strings and data, as split cuts them.
func (d *rowDecoder) event(f *[6][]byte, id session.ID, seq, t int64) (session.Event, error) {
	ev, err := d.decode(f)
	if err != nil {
		return session.Event{}, fmt.Errorf("session %q seq %d: %w", id, seq, err)
	}
	ev.Seq, ev.Time, ev.Session = seq, time.Unix(0, t), id
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
