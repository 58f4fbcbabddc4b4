package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
)

// A read ahead brings the events after its start, in order and whole, in
// batches, up to a row that must be read again column by column, which
// it leaves to the reader with the rest; and a read ahead stopped early
// ends its goroutine.
func TestReadAheadBringsTheHalf(t *testing.T) {
	ctx := context.Background()
	st, id := newSession(t)
	const n, from = 1000, 300
	t0 := time.Unix(1700000000, 0)
	var evs []session.Event
	for seq := int64(1); seq <= n; seq++ {
		ev := session.Event{Seq: seq, Time: t0.Add(time.Duration(seq)), Turn: "t1", Data: &session.StepStart{Step: int(seq)}}
		if seq == 700 {
			ev.Agent = "a\x1fb" // a separator in a header string: the row is read again
		}
		evs = append(evs, ev)
	}
	if err := st.Append(ctx, id, evs...); err != nil {
		t.Fatal(err)
	}
	num := numOf(t, st, id)
	a := st.readAhead(ctx, id, num, from, n-from)
	next, batches := int64(from+1), 0
	for batch := range a.events {
		batches++
		for _, e := range batch {
			p, ok := e.Data.(*session.StepStart)
			if e.Seq != next || !ok || p.Step != int(e.Seq) || !e.Time.Equal(t0.Add(time.Duration(e.Seq))) || e.Session != id {
				t.Fatalf("got seq %d (%#v at %v in %q), want seq %d", e.Seq, e.Data, e.Time, e.Session, next)
			}
			next++
		}
	}
	a.close()
	if next != 700 || batches < (700-from)/batchRows {
		t.Errorf("read ahead to seq %d in %d batches, want to 699 in %d or more", next-1, batches, (700-from)/batchRows)
	}
	// A number that is no longer the session's brings nothing: the
	// session was deleted and its number taken by another.
	a = st.readAhead(ctx, id, num+1, from, n-from)
	<-a.done
	select {
	case <-a.started:
		t.Error("a read ahead under another session's number began")
	default:
	}
	if _, ok := <-a.events; ok {
		t.Error("a read ahead under another session's number brought events")
	}
	// Stopped before it reads anything, or partway: close returns once the
	// goroutine has ended.
	st.readAhead(ctx, id, num, 0, n).close()
	a = st.readAhead(ctx, id, num, 0, n)
	<-a.events
	a.close()
}

// What a read ahead brings is yielded as long as each event follows the
// one before; whatever it does not bring (nothing, a short half, a gap,
// the events of a session made again under the same id, and all of them
// if it has no connection yet) is read in the reader's transaction.
// Newer events than the reader's transaction holds are kept: the log
// only grows.
func TestAheadHalfIsReadAgainWhereItFallsShort(t *testing.T) {
	ctx := context.Background()
	st, id := newSession(t)
	const n, to = 40, 20
	t0 := time.Unix(1700000000, 0)
	event := func(seq int64) session.Event {
		return session.Event{Seq: seq, Time: t0, Session: id, Turn: "t1", Data: &session.StepStart{Step: int(seq)}}
	}
	var evs []session.Event
	for seq := int64(1); seq <= n; seq++ {
		evs = append(evs, event(seq))
	}
	if err := st.Append(ctx, id, evs...); err != nil {
		t.Fatal(err)
	}
	span := func(from, to int64) (seqs []int64) {
		for seq := from; seq <= to; seq++ {
			seqs = append(seqs, seq)
		}
		return seqs
	}
	for _, c := range []struct {
		name    string
		waiting bool // the read ahead has no connection yet
		batches [][]int64
		want    []int64
	}{
		{"whole", false, [][]int64{span(21, 30), span(31, 40)}, span(21, 40)},
		{"nothing", false, nil, span(21, 40)},
		{"short", false, [][]int64{span(21, 25)}, span(21, 40)},
		{"gap", false, [][]int64{{21, 22, 24, 25}}, span(21, 40)},
		{"made again", false, [][]int64{span(1, 5)}, span(21, 40)},
		{"newer", false, [][]int64{span(21, 45)}, span(21, 45)},
		{"not begun", true, [][]int64{span(21, 45)}, span(21, 40)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := yieldFake(ctx, t, st, id, to, !c.waiting, c.batches)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				if p, ok := e.Data.(*session.StepStart); !ok || p.Step != int(e.Seq) {
					t.Errorf("seq %d holds %#v", e.Seq, e.Data)
				}
			}
			if seqs := seqsOf(got); !slices.Equal(seqs, c.want) {
				t.Errorf("yielded seqs %v, want %v", seqs, c.want)
			}
		})
	}
}

// A read whose context is done yields nothing more of what its read
// ahead brought, and ends with the context's error.
func TestAheadStopsWhenTheContextIsDone(t *testing.T) {
	st, id := newSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := yieldFake(ctx, t, st, id, 0, true, [][]int64{{1, 2, 3}})
	if len(got) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("yielded %d events and %v, want none and %v", len(got), err, context.Canceled)
	}
}

// yieldFake runs yieldAhead, in a read transaction of st, over a read
// ahead that brings batches of events of id with these seqs, once
// started. It returns what was yielded, up to and without the first
// error, and that error.
func yieldFake(ctx context.Context, t *testing.T, st *Store, id session.ID, to int64, started bool, batches [][]int64) (got []session.Event, yerr error) {
	t.Helper()
	a := &ahead{events: make(chan []session.Event, len(batches)), started: make(chan struct{}), cancel: func() {}, done: make(chan struct{})}
	if started {
		close(a.started)
	}
	for _, b := range batches {
		var batch []session.Event
		for _, seq := range b {
			batch = append(batch, session.Event{Seq: seq, Session: id, Turn: "t1", Data: &session.StepStart{Step: int(seq)}})
		}
		a.events <- batch
	}
	close(a.events)
	close(a.done)
	num := numOf(t, st, id)
	conn, err := st.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		q, tx, err := beginRead(context.Background(), dc)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		st.yieldAhead(ctx, q, id, num, a, to, func(e session.Event, err error) bool {
			if err != nil {
				yerr = err
				return false
			}
			got = append(got, e)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, yerr
}

func seqsOf(evs []session.Event) []int64 {
	seqs := make([]int64, len(evs))
	for i := range evs {
		seqs[i] = evs[i].Seq
	}
	return seqs
}

// newSession opens a store closed with t and creates a session in it.
func newSession(t *testing.T) (*Store, session.ID) {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := st.Create(context.Background(), &session.CreateRequest{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return st, id
}

// numOf returns the number of session id in st, the high bits of its
// events' keys.
func numOf(t *testing.T, st *Store, id session.ID) int64 {
	t.Helper()
	var num int64
	if err := st.db.QueryRow(`SELECT num FROM sessions WHERE id = ?`, string(id)).Scan(&num); err != nil {
		t.Fatal(err)
	}
	return num
}
