package postgres_test

import (
	"context"
	"errors"
	"github.com/reinhq/rein/internal/testwait"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sessiontest"
)

// openTurn is a turn left in the middle of a tool call.
func openTurn(id session.ID) *sessiontest.Log {
	return sessiontest.NewLog(id).FullTurn("first").StartTurn("second").OpenStep("working", "c1").Started("c1")
}

// handOver appends an open turn to a new session id through a, then
// rewrites its lease as if a Store on another host held it: pid 4242 on
// host far-away, expiring expiresIn from the server's clock, with its
// connection open (a's) or gone.
func handOver(t *testing.T, a *postgres.Store, id session.ID, connOpen bool, expiresIn time.Duration) *sessiontest.Log {
	t.Helper()
	ctx := context.Background()
	if _, err := a.Create(ctx, &session.CreateRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	l := openTurn(id)
	if err := a.Append(ctx, id, l.Events...); err != nil {
		t.Fatal(err)
	}
	tag, err := a.Pool().Exec(ctx, `UPDATE leases SET owner = 'far', pid = 4242, host = 'far-away', space = 'elsewhere',
		backend = CASE WHEN $2 THEN backend ELSE 0 END, expires = now() + $3::interval WHERE session = $1`,
		string(id), connOpen, expiresIn)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("rewrite the lease: %v, %d rows", err, tag.RowsAffected())
	}
	return l
}

// TestB70_LeaseHeldElsewhere: a live lease of a Store on another host
// refuses a second driver with a *LeaseError naming the holder, and
// leaves its open turn alone.
func TestB70_LeaseHeldElsewhere(t *testing.T) {
	u := schemaURL(t)
	a, b := open(t, u, nil), open(t, u, nil)
	ctx := context.Background()
	l := handOver(t, a, "s", true, time.Hour)
	err := b.Append(ctx, "s", openTurn("s").StartTurn("mine").Events[len(l.Events):]...)
	var le *postgres.LeaseError
	if !errors.As(err, &le) || !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Append while another host holds the lease: err = %v, want a *LeaseError wrapping ErrLocked", err)
	}
	if le.Lost || le.Holder.PID != 4242 || le.Holder.Host != "far-away" || !strings.Contains(err.Error(), "pid 4242 on host far-away") {
		t.Errorf("LeaseError = %+v (%q); want the holder pid 4242 on host far-away", le, err)
	}
	got, err := sessiontest.ReadAll(ctx, b, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(l.Events, got); diff != "" {
		t.Errorf("a reader changed a live holder's log (-want +got):\n%s", diff)
	}
}

// TestB70_LeaseTakeover: a lease that expired, or whose holder's connection
// is gone, is taken over by the next driver, which first closes the turn
// the holder left open; the old holder's next Append is refused as lost
// and writes nothing.
func TestB70_LeaseTakeover(t *testing.T) {
	serverURL(t)
	for _, tc := range []struct {
		name      string
		connOpen  bool
		expiresIn time.Duration
	}{
		{"expired", true, -time.Second},
		{"connection gone", false, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := schemaURL(t)
			a, b := open(t, u, nil), open(t, u, nil)
			ctx := context.Background()
			l := handOver(t, a, "s", tc.connOpen, tc.expiresIn)
			info, err := b.Info(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if info.LastSeq != int64(len(l.Events))+3 {
				t.Fatalf("LastSeq after takeover = %d, want %d and 3 repair events", info.LastSeq, len(l.Events))
			}
			all, err := sessiontest.ReadAll(ctx, b, "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := session.Balanced(all); err != nil {
				t.Fatalf("after takeover: %v", err)
			}
			next := sessiontest.NewLog("s")
			next.Events = all
			next.StartTurn("mine")
			if err := b.Append(ctx, "s", next.Events[len(all):]...); err != nil {
				t.Fatalf("Append after takeover: %v", err)
			}
			// a still believes it holds the lease.
			late := sessiontest.NewLog("s")
			late.Events = append([]session.Event(nil), l.Events...)
			late.Result("c1", "late")
			err = a.Append(ctx, "s", late.Events[len(l.Events):]...)
			var le *postgres.LeaseError
			if !errors.As(err, &le) || !le.Lost {
				t.Fatalf("the old holder's Append: err = %v, want a *LeaseError with Lost", err)
			}
			got, err := sessiontest.ReadAll(ctx, b, "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := sessiontest.DiffEvents(next.Events, got); diff != "" {
				t.Errorf("log after the old holder's refused Append (-want +got):\n%s", diff)
			}
		})
	}
}

// TestB70_LeaseRenewed: a holder renews its lease, so it is still refused to
// others after its first expiry has passed.
func TestB70_LeaseRenewed(t *testing.T) {
	u := schemaURL(t)
	const ttl = 900 * time.Millisecond
	a, b := open(t, u, &postgres.Options{LeaseTTL: ttl}), open(t, u, nil)
	ctx := context.Background()
	if _, err := a.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	l := openTurn("s")
	if err := a.Append(ctx, "s", l.Events...); err != nil {
		t.Fatal(err)
	}
	var first time.Time
	if err := a.Pool().QueryRow(ctx, `SELECT expires FROM leases WHERE session = 's'`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	// Wait on the server's clock until the first expiry has passed.
	deadline := time.Now().Add(20 * time.Second)
	passed := testwait.For(time.Until(deadline), func() bool {
		var passed bool
		if err := a.Pool().QueryRow(ctx, `SELECT now() > $1`, first).Scan(&passed); err != nil {
			t.Fatal(err)
		}
		return passed
	})
	if !passed {
		t.Fatal("the server's clock did not pass the lease's expiry")
	}
	var now time.Time
	if err := a.Pool().QueryRow(ctx, `SELECT expires FROM leases WHERE session = 's'`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	if !now.After(first) {
		t.Fatalf("lease expiry %v was not renewed past %v", now, first)
	}
	if err := b.Append(ctx, "s", openTurn("s").Result("c1", "x").Events[len(l.Events):]...); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Append by another Store after the first expiry: err = %v, want ErrLocked (the lease was renewed)", err)
	}
}

// TestFollowOtherStore: a follower sees another Store's appends through
// NOTIFY alone (its polling interval is an hour).
func TestFollowOtherStore(t *testing.T) {
	u := schemaURL(t)
	w, r := open(t, u, nil), open(t, u, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.Create(ctx, &session.CreateRequest{ID: "f"}); err != nil {
		t.Fatal(err)
	}
	l := sessiontest.NewLog("f").FullTurn("a", "c1").FullTurn("b")
	got := make(chan session.Event)
	go func() {
		defer close(got)
		for e, err := range (&session.FollowOptions{Interval: time.Hour}).Follow(ctx, r, "f", 0) {
			if err != nil {
				return
			}
			got <- e
		}
	}()
	var seen []session.Event
	for i, e := range l.Events {
		if err := w.Append(ctx, "f", e); err != nil {
			t.Fatal(err)
		}
		select {
		case e, ok := <-got:
			if !ok {
				t.Fatalf("Follow ended after %d events", i)
			}
			seen = append(seen, e)
		case <-ctx.Done():
			t.Fatalf("the follower saw %d of %d events, then nothing", i, len(l.Events))
		}
	}
	cancel()
	for range got {
	}
	if diff := cmp.Diff(len(l.Events), len(seen)); diff != "" {
		t.Fatalf("events seen (-want +got):\n%s", diff)
	}
	if diff := sessiontest.DiffEvents(l.Events, seen); diff != "" {
		t.Errorf("followed events (-want +got):\n%s", diff)
	}
}

// TestB70_LeaseSurvivesReconnect: when the server drops a holder's own
// connection, the holder reconnects, its lease names the new connection,
// and others are still refused; a follower on it is woken again.
func TestB70_LeaseSurvivesReconnect(t *testing.T) {
	u := schemaURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := open(t, u, &postgres.Options{LeaseTTL: time.Hour}), open(t, u, nil)
	if _, err := a.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	l := openTurn("s")
	if err := a.Append(ctx, "s", l.Events...); err != nil {
		t.Fatal(err)
	}
	backendOf := func() (pid int32) {
		t.Helper()
		if err := b.Pool().QueryRow(ctx, `SELECT backend FROM leases WHERE session = 's'`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		return pid
	}
	old := backendOf()
	var ok bool
	if err := b.Pool().QueryRow(ctx, `SELECT pg_terminate_backend($1)`, old).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the holder's connection: %v, %v", ok, err)
	}
	if !testwait.For(time.Until(deadlineOf(ctx)), func() bool { return backendOf() != old }) {
		t.Fatal("the lease still names the dropped connection")
	}
	err := b.Append(ctx, "s", openTurn("s").Result("c1", "x").Events[len(l.Events):]...)
	if !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Append by another Store after the holder reconnected: err = %v, want ErrLocked", err)
	}
	ch, stop := a.Subscribe("s")
	defer stop()
	next := openTurn("s").Result("c1", "x")
	if err := a.Append(ctx, "s", next.Events[len(l.Events):]...); err != nil {
		t.Fatalf("the holder's Append after reconnecting: %v", err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no notification after reconnecting")
	}
}

// TestB70_RaceForLease: Stores racing to start one session get one
// winner; the others get a *LeaseError, and the log holds the winner's
// batch once.
func TestB70_RaceForLease(t *testing.T) {
	u := schemaURL(t)
	ctx := context.Background()
	stores := make([]*postgres.Store, 4)
	for i := range stores {
		stores[i] = open(t, u, nil)
	}
	if _, err := stores[0].Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	batch := sessiontest.NewLog("s").FullTurn("first").Events
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() { errs[i] = st.Append(ctx, "s", batch...) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		var le *postgres.LeaseError
		switch {
		case err == nil:
			won++
		case errors.As(err, &le) && !le.Lost:
		default:
			t.Errorf("Store %d: err = %v, want nil or a *LeaseError", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d Stores appended, want exactly 1", won)
	}
	got, err := sessiontest.ReadAll(ctx, stores[0], "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(batch, got); diff != "" {
		t.Errorf("log after the race (-want +got):\n%s", diff)
	}
}

// deadlineOf is ctx's deadline, or a minute from now when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
