package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/session"
)

// An event's key is its session's number above the low seqBits bits and
// its seq in them (the schema's version 2), so a session holds seqs up to
// maxSeq. The queries spell the shift out as 32.
const (
	seqBits = 32
	maxSeq  = 1<<seqBits - 1
)

// eventKey is the key of the event at seq of the session numbered num.
func eventKey(num, seq int64) int64 { return num<<seqBits | seq }

// keysOf returns the bounds, both left out, of the keys of the events of
// the session numbered num.
func keysOf(num int64) (after, before int64) { return eventKey(num, 0), eventKey(num+1, 0) }

// maxRows is the most events one insert statement writes; a larger batch
// takes several. A step's batches hold one to a few events.
const maxRows = 8

// eventCols is the number of columns an inserted event binds.
const eventCols = 8

// The session row's last_seq and updated are set by a batch that ends a
// turn (and by a repair), not by the batches within one: an update is
// two more statements and a second page of the database, a second frame
// of the commit. The events are the truth; readers take the newest one's
// seq and time, which the row holds only when no event is newer.
const (
	newestSeq  = `COALESCE((SELECT seq FROM events WHERE ` + ownKeys + ` ORDER BY key DESC LIMIT 1), last_seq)`
	newestTime = `COALESCE((SELECT time FROM events WHERE ` + ownKeys + ` ORDER BY key DESC LIMIT 1), updated)`
	// ownKeys picks the events of the session row in the query.
	ownKeys = `key > sessions.num << 32 AND key < (sessions.num + 1) << 32`
)

// endsTurn reports whether events hold a turn.end.
func endsTurn(events []session.Event) bool {
	for i := range events {
		if _, ok := events[i].Data.(*session.TurnEnd); ok {
			return true
		}
	}
	return false
}

// appendTx commits events to session id, numbered num, which append has
// checked to follow the session's last seq, in one transaction run by
// statements prepared once on the write connection: one insert of all
// the batch's rows (up to maxRows a statement), and the session row's
// update at a turn's end; a batch that one insert holds and that updates
// no row is that insert alone, a transaction of its own, and needs no
// BEGIN and COMMIT. No statement runs per event. s.wmu is held.
func (s *Store) appendTx(ctx context.Context, id session.ID, num int64, events []session.Event) error {
	row := endsTurn(events)
	if !row && len(events) <= maxRows {
		return s.record(ctx, id, num, events, false)
	}
	return s.inTx(ctx, func() error { return s.record(ctx, id, num, events, row) })
}

// record inserts events of session id, numbered num, maxRows a
// statement, binding their values into the Store's reused argument slice
// and their data into its reused buffer, and, if row, sets the session
// row's last seq and time, all through the write connection's prepared
// statements. The inserts run on the driver's statements, without
// database/sql's conversion and copy of every argument. s.wmu is held.
func (s *Store) record(ctx context.Context, id session.ID, num int64, events []session.Event, row bool) error {
	lastEv := &events[len(events)-1]
	if lastEv.Seq > maxSeq {
		return fmt.Errorf("sqlite: append to %q: seq %d is past the last a session can hold, %d; start a new session", id, lastEv.Seq, int64(maxSeq))
	}
	for len(events) > 0 {
		n := min(len(events), maxRows)
		stmt, err := s.insertStmt(ctx, n)
		if err != nil {
			return err
		}
		// The data of all n rows go in one buffer, sliced once it stops
		// growing; the driver copies what it binds.
		var ends [maxRows]int
		buf := s.data[:0]
		for i := range events[:n] {
			if buf, err = session.AppendPayloadJSON(buf, events[i].Data); err != nil {
				return fmt.Errorf("sqlite: append to %q: event seq %d: %w", id, events[i].Seq, err)
			}
			ends[i] = len(buf)
		}
		s.data = buf
		args, start := s.args[:0], 0
		for i := range events[:n] {
			e := &events[i]
			for _, v := range [eventCols]any{eventKey(num, e.Seq), e.Time.UnixNano(), e.Data.EventType(),
				string(e.Turn), string(e.Run), string(e.ParentRun), e.Agent, buf[start:ends[i]:ends[i]]} {
				args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: v})
			}
			start = ends[i]
		}
		err = s.w.Raw(func(any) error {
			_, err := stmt.ExecContext(ctx, args)
			return err
		})
		clear(args)
		s.args = args[:0]
		if err != nil {
			if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
				return fmt.Errorf("sqlite: append to %q: a seq from %d to %d exists: %w", id, events[0].Seq, events[n-1].Seq, session.ErrSeqConflict)
			}
			return err
		}
		events = events[n:]
	}
	if !row {
		return nil
	}
	_, err := s.updSes.ExecContext(ctx, lastEv.Seq, lastEv.Time.UnixNano(), num)
	return err
}

// insertStmt returns the driver's statement inserting n events,
// preparing it on the write connection the first time. s.wmu is held.
func (s *Store) insertStmt(ctx context.Context, n int) (driver.StmtExecContext, error) {
	if st := s.insRows[n-1]; st != nil {
		return st, nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO events (key, time, type, turn, run, parent_run, agent, data) VALUES `)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?" + strings.Repeat(", ?", eventCols-1) + ")")
	}
	err := s.w.Raw(func(dc any) error {
		ds, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, q.String())
		if err != nil {
			return err
		}
		st, ok := ds.(driver.StmtExecContext)
		if !ok {
			ds.Close()
			return errors.New("sqlite: the driver's statements do not take a context")
		}
		s.insRows[n-1] = st
		return nil
	})
	return s.insRows[n-1], err
}

// closeInserts closes the prepared inserts. s.wmu is held.
func (s *Store) closeInserts() error {
	return s.w.Raw(func(any) error {
		var first error
		for i, st := range s.insRows {
			if st != nil {
				if err := st.(driver.Stmt).Close(); err != nil && first == nil {
					first = err
				}
				s.insRows[i] = nil
			}
		}
		return first
	})
}
