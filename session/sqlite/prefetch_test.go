package sqlite_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

// t0 is the time of the events appendTurn writes: seq nanoseconds after it.
var t0 = time.Unix(1700000000, 0)

// appendTurn appends to id, which has no events yet, one turn of n
// events: its start, steps 2 to n-1, and its end, which sets the session
// row's last seq, from which a read tells whether it is long enough to
// be cut in two. Each event's time is t0 plus its seq in nanoseconds; a
// step whose seq is in separated has a unit separator in its agent name,
// so that its row is read again column by column.
func appendTurn(t *testing.T, st *sqlite.Store, id session.ID, n int64, separated map[int64]bool) {
	t.Helper()
	evs := []session.Event{{Seq: 1, Time: t0.Add(1), Turn: "t1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}}}
	for seq := int64(2); seq < n; seq++ {
		ev := session.Event{Seq: seq, Time: t0.Add(time.Duration(seq)), Turn: "t1", Data: &session.StepStart{Step: int(seq)}}
		if separated[seq] {
			ev.Agent = "a\x1fb"
		}
		evs = append(evs, ev)
	}
	evs = append(evs, session.Event{Seq: n, Time: t0.Add(time.Duration(n)), Turn: "t1", Data: &session.TurnEnd{Reason: session.EndCompleted}})
	if err := st.Append(context.Background(), id, evs...); err != nil {
		t.Fatal(err)
	}
}

// checkStep fails t unless e, an event appendTurn wrote at seq, or a
// step appended after it, is whole.
func checkStep(t *testing.T, e session.Event, seq int64) {
	t.Helper()
	if e.Seq != seq || !e.Time.Equal(t0.Add(time.Duration(seq))) {
		t.Fatalf("got seq %d at %v, want seq %d", e.Seq, e.Time, seq)
	}
	if p, ok := e.Data.(*session.StepStart); ok && p.Step != int(seq) {
		t.Fatalf("seq %d holds step %d", seq, p.Step)
	}
}

// A read long enough to step its statement on a goroutine, or to be cut
// in two and its second half read ahead on a connection of its own,
// yields every event in order, including one read again column by column
// in either half, stops where its reader stops, and leaves no goroutine
// behind.
func TestLongReadYieldsInOrderAndStops(t *testing.T) {
	ctx := context.Background()
	st, id := openSession(t, "long")
	const n = 20000
	separated := map[int64]bool{2500: true, 15000: true}
	appendTurn(t, st, id, n, separated)
	before := runtime.NumGoroutine()
	// From 0, 100 and 2000 the read is cut in two; from 15000 it is not.
	for _, from := range []int64{0, 100, 2000, 15000} {
		want := from + 1
		for e, err := range st.Events(ctx, id, from) {
			if err != nil {
				t.Fatalf("from %d: %v", from, err)
			}
			checkStep(t, e, want)
			if separated[e.Seq] != (e.Agent == "a\x1fb") {
				t.Errorf("seq %d's agent = %q", e.Seq, e.Agent)
			}
			want++
		}
		if want != n+1 {
			t.Errorf("from %d: read up to seq %d, want %d", from, want-1, n)
		}
	}
	// Stop in the first half, and in the second.
	for _, stop := range []int{1500, 15000} {
		read := 0
		for _, err := range st.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if read++; read == stop {
				break
			}
		}
	}
	if !testwait.For(3*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		t.Errorf("%d goroutines after the reads, %d before", runtime.NumGoroutine(), before)
	}
	// The store still reads and writes after a read was cut short.
	if err := st.Append(ctx, id, session.Event{Seq: n + 1, Time: t0, Turn: "t2", Data: &session.TurnStart{Trigger: session.TriggerPrompt}}); err != nil {
		t.Fatal(err)
	}
}

// A long read while the session grows yields every event it began with,
// in order, each once, and perhaps some of the newer ones after them.
func TestLongReadWhileAppending(t *testing.T) {
	ctx := context.Background()
	st, id := openSession(t, "growing")
	const n, more = 20000, 500
	appendTurn(t, st, id, n, nil)
	appended := make(chan error, 1)
	go func() {
		for seq := int64(n + 1); seq <= n+more; seq++ {
			ev := session.Event{Seq: seq, Time: t0.Add(time.Duration(seq)), Turn: "t2", Data: &session.StepStart{Step: int(seq)}}
			if err := st.Append(ctx, id, ev); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	want := int64(1)
	for e, err := range st.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		checkStep(t, e, want)
		want++
	}
	if want <= n {
		t.Errorf("read up to seq %d while appending, want %d or more", want-1, n)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	got, err := sessiontest.ReadAll(ctx, st, id, 0)
	if err != nil || len(got) != n+more {
		t.Fatalf("read %d events after the appends (%v), want %d", len(got), err, n+more)
	}
}

// A long read takes a second connection for its second half; on a pool
// the host limited to two, the Store's own and the reader's, it reads
// that half itself rather than wait for a third, and reads a row again
// column by column on its own connection, in either half.
func TestLongReadOnALimitedPool(t *testing.T) {
	ctx := context.Background()
	st, id := openSession(t, "pool")
	const n = 20000
	separated := map[int64]bool{500: true, 3000: true, 15000: true}
	appendTurn(t, st, id, n, separated)
	for _, limit := range []int{0, 2} {
		st.DB().SetMaxOpenConns(limit)
		got, err := sessiontest.ReadAll(ctx, st, id, 0)
		if err != nil || len(got) != n || got[n-1].Seq != n {
			t.Fatalf("limit %d: read %d events (%v), want %d", limit, len(got), err, n)
		}
		for i, e := range got {
			checkStep(t, e, int64(i+1))
			if separated[e.Seq] != (e.Agent == "a\x1fb") {
				t.Fatalf("limit %d: seq %d has agent %q", limit, e.Seq, e.Agent)
			}
		}
		if limit == 0 {
			// The Store's writer, and the read's two, idle in the pool.
			if open := st.DB().Stats().OpenConnections; open != 3 {
				t.Errorf("%d connections open after a read of %d events, want 3: the read was not cut in two", open, n)
			}
		}
	}
}

// A long read whose context is cancelled partway, in its first half or
// in the second read ahead, ends with an error, not a silently short log,
// and the store reads on afterwards.
func TestCancelledLongReadEndsWithAnError(t *testing.T) {
	for _, c := range []struct{ n, cancelAt int }{{5000, 2000}, {20000, 15000}} {
		t.Run(strconv.Itoa(c.n), func(t *testing.T) { cancelRead(t, c.n, c.cancelAt) })
	}
}

// cancelRead cancels a read of n events after cancelAt of them.
func cancelRead(t *testing.T, n, cancelAt int) {
	st, id := openSession(t, "cut")
	appendTurn(t, st, id, int64(n), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read, last := 0, int64(0)
	var end error
	for e, err := range st.Events(ctx, id, 0) {
		if err != nil {
			end = err
			break
		}
		if e.Seq != last+1 {
			t.Fatalf("seq %d after %d", e.Seq, last)
		}
		last = e.Seq
		if read++; read == cancelAt {
			cancel()
		}
	}
	if end == nil {
		t.Fatalf("a cancelled read ended without an error after %d of %d events", read, n)
	}
	if read >= n {
		t.Errorf("the cancelled read yielded all %d events", read)
	}
	got, err := sessiontest.ReadAll(context.Background(), st, id, 0)
	if err != nil || len(got) != n {
		t.Fatalf("read %d events after the cancelled read (%v), want %d", len(got), err, n)
	}
}

// On a pool limited to one connection, which the Store keeps for its
// writes, a read would wait for ever: each fails at once with an error
// that says what to allow, and writes go on.
func TestPoolOfOneConnectionFailsReads(t *testing.T) {
	ctx := context.Background()
	st, id := openSession(t, "one")
	other, err := st.Create(ctx, &session.CreateRequest{ID: "other"}) // not held: Sync reads its row
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, st, id, 10, nil)
	st.DB().SetMaxOpenConns(1)
	_, readErr := sessiontest.ReadAll(ctx, st, id, 0)
	_, infoErr := st.Info(ctx, id)
	_, listErr := st.List(ctx)
	for name, err := range map[string]error{"Events": readErr, "Info": infoErr, "List": listErr, "Sync": st.Sync(ctx, other)} {
		if err == nil || !strings.Contains(err.Error(), "SetMaxOpenConns(2)") {
			t.Errorf("%s on a pool of one connection: %v, want an error that says to allow two", name, err)
		}
	}
	more := []session.Event{{Seq: 11, Time: t0.Add(11), Turn: "t2", Data: &session.TurnStart{Trigger: session.TriggerPrompt}}}
	if err := st.Append(ctx, id, more...); err != nil {
		t.Fatalf("Append on a pool of one connection: %v", err)
	}
	st.DB().SetMaxOpenConns(2)
	if got, err := sessiontest.ReadAll(ctx, st, id, 0); err != nil || len(got) != 11 {
		t.Fatalf("read %d events (%v) with two connections, want 11", len(got), err)
	}
}
