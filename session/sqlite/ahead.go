package sqlite

import (
	"context"
	"database/sql/driver"
	"math"

	"github.com/reinhq/rein/session"
)

// A long read is cut in two at its middle seq. While the reader reads
// the first half (stepping on one goroutine, decoding on its own, see
// prefetch), a goroutine with a connection and a read transaction of its
// own reads and decodes the second half; the reader then yields those
// events from memory. On two cores this keeps both busy for the whole
// read, where stepping alone was the slower half of it.
//
// The second half's transaction begins after the reader's, so it holds
// every event the reader's does, and perhaps newer ones: events are only
// ever appended. What it does not bring, because the session was deleted
// in between or its read failed, the reader reads in its own
// transaction, which stays the truth.

// aheadRows is the fewest events a read must have before it is cut in two.
const aheadRows = 8192

// ahead is the second half of a long read, read ahead.
type ahead struct {
	events chan []session.Event // the half's events in batches, in order; closed at its end
	stop   chan struct{}        // closed when the reader needs no more
	done   chan struct{}        // closed when the goroutine has ended
}

// readAhead starts reading the events of id with seq > from, about want
// of them, on a goroutine of its own.
func (s *Store) readAhead(ctx context.Context, id session.ID, from, want int64) *ahead {
	a := &ahead{
		// Room for the whole half: the goroutine does not wait for the
		// reader, which is still in the first.
		events: make(chan []session.Event, want/batchRows+2),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go func() {
		defer close(a.done)
		defer close(a.events)
		c, err := s.db.Conn(ctx)
		if err != nil {
			return // the reader reads the half itself
		}
		defer c.Close()
		c.Raw(func(dc any) error {
			q, tx, err := beginRead(ctx, dc)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			a.fetch(ctx, s, q, id, from)
			return nil
		})
	}()
	return a
}

// fetch reads and decodes the events of id with seq > from through q and
// sends them in batches, until their end, an error or a stop. An error
// ends the half early; the reader reads the rest itself.
func (a *ahead) fetch(ctx context.Context, s *Store, q driver.QueryerContext, id session.ID, from int64) {
	rows, err := q.QueryContext(ctx, eventsQuery, eventsArgs(id, from, math.MaxInt64))
	if err != nil {
		return
	}
	defer rows.Close()
	r := driverRows{ctx: ctx, rows: rows}
	var (
		f [6][]byte
		d rowDecoder
	)
	batch := make([]session.Event, 0, batchRows)
	for more := true; more; {
		seq, t, row, ok := r.next()
		if ok {
			ev, err := s.event(ctx, s.db, &d, &f, id, seq, t, row)
			if ok = err == nil; ok {
				batch = append(batch, ev)
			}
		}
		more = ok
		if len(batch) == batchRows || !more && len(batch) > 0 {
			if !a.send(batch) {
				return
			}
			batch = make([]session.Event, 0, batchRows)
		}
	}
}

// send hands batch to the reader; it reports false if the reader needs
// no more.
func (a *ahead) send(batch []session.Event) bool {
	select {
	case <-a.stop:
		return false
	default:
	}
	select {
	case a.events <- batch:
		return true
	case <-a.stop:
		return false
	}
}

// close stops the read ahead and waits for its goroutine to end.
func (a *ahead) close() {
	close(a.stop)
	<-a.done
}

// yieldAhead yields the events of id with seq > to: a's, as long as each
// follows the one before and the context is not done, then whatever a
// did not bring, read through q in the reader's transaction.
func (s *Store) yieldAhead(ctx context.Context, q driver.QueryerContext, id session.ID, a *ahead, to int64, yield func(session.Event, error) bool) {
	next := to + 1
half:
	for batch := range a.events {
		if ctx.Err() != nil {
			break // the read below ends with the context's error
		}
		for i := range batch {
			if batch[i].Seq != next {
				break half
			}
			if !yield(batch[i], nil) {
				return
			}
			next++
		}
	}
	s.yieldQuery(ctx, q, id, next-1, math.MaxInt64, yield)
}
