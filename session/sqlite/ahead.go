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
// ever appended. What it does not bring (the session deleted in between,
// a failed read, a row to read again column by column, no connection to
// spare, the session's number taken by another) the reader reads in its
// own transaction, which stays the truth.

// aheadRows is the fewest events a read must have before it is cut in
// two, counted to the last seq of the session row (see sessionRow): a
// read within a long turn still open is not cut, which costs only time.
const aheadRows = 8192

// ahead is the second half of a long read, read ahead.
type ahead struct {
	events  chan []session.Event // the half's events in batches, in order; closed at its end
	started chan struct{}        // closed once the goroutine's transaction has begun
	cancel  context.CancelFunc   // ends the goroutine's read, or its wait for a connection
	done    chan struct{}        // closed when the goroutine has ended
}

// readAhead starts reading the events of id, numbered num, with seq >
// from, about want of them, on a goroutine of its own.
func (s *Store) readAhead(ctx context.Context, id session.ID, num, from, want int64) *ahead {
	ctx, cancel := context.WithCancel(ctx)
	a := &ahead{
		// Room for the whole half: the goroutine does not wait for the
		// reader, which is still in the first.
		events:  make(chan []session.Event, want/batchRows+2),
		started: make(chan struct{}),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go func() {
		defer close(a.done)
		defer close(a.events)
		// A pool the host limited may have no connection to spare until
		// the reader is done; the reader does not wait for one.
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
			// A session deleted since the reader began may have left its
			// number to another.
			if n, _, err := sessionRow(ctx, q, id); err != nil || n != num {
				return err
			}
			close(a.started)
			a.fetch(ctx, q, id, num, from)
			return nil
		})
	}()
	return a
}

// fetch reads and decodes the events of id, numbered num, with seq > from
// through q and sends them in batches, until their end, an error or a
// stop. An error, or a row to read again column by column, ends the half
// early; the reader reads the rest itself.
func (a *ahead) fetch(ctx context.Context, q driver.QueryerContext, id session.ID, num, from int64) {
	rows, err := queryEvents(ctx, q, num, from, math.MaxInt64)
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
		if ok = ok && split(&f, row); ok {
			ev, err := d.event(&f, id, seq, t)
			if ok = err == nil; ok {
				batch = append(batch, ev)
			}
		}
		more = ok
		if len(batch) == batchRows || !more && len(batch) > 0 {
			if !a.send(ctx, batch) {
				return
			}
			batch = make([]session.Event, 0, batchRows)
		}
	}
}

// send hands batch to the reader; it reports false if the reader needs
// no more.
func (a *ahead) send(ctx context.Context, batch []session.Event) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case a.events <- batch:
		return true
	case <-ctx.Done():
		return false
	}
}

// close stops the read ahead and waits for its goroutine to end.
func (a *ahead) close() {
	a.cancel()
	<-a.done
}

// yieldAhead yields the events of id, numbered num, with seq > to: those
// a brought, then whatever it did not, read through q in the reader's
// transaction.
func (s *Store) yieldAhead(ctx context.Context, q driver.QueryerContext, id session.ID, num int64, a *ahead, to int64, yield func(session.Event, error) bool) {
	if next, ok := a.yield(ctx, to+1, yield); ok {
		s.yieldQuery(ctx, q, id, num, next-1, math.MaxInt64, yield)
	}
}

// yield yields a's events from seq next on, as long as each follows the
// one before and the context is not done, and none if a has not begun
// reading. It returns the seq after the last it yielded, and false if
// yield stopped it.
func (a *ahead) yield(ctx context.Context, next int64, yield func(session.Event, error) bool) (int64, bool) {
	select {
	case <-a.started:
	default:
		// Still waiting for a connection, which may come only once this
		// read is done.
		a.cancel()
		return next, true
	}
	for batch := range a.events {
		if ctx.Err() != nil {
			break // the reader's own read ends with the context's error
		}
		for i := range batch {
			if batch[i].Seq != next {
				return next, true
			}
			if !yield(batch[i], nil) {
				return next, false
			}
			next++
		}
	}
	return next, true
}
