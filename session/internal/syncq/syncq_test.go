package syncq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gate is a sync that blocks until released, counting its calls.
type gate struct {
	entered chan struct{}
	release chan error
	calls   int
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan error)} }

func (g *gate) sync() error {
	g.calls++
	g.entered <- struct{}{}
	return <-g.release
}

func TestCoalesces(t *testing.T) {
	var q Queue
	g := newGate()
	q.Request(1, g.sync)
	<-g.entered // the sync of 1 runs
	// Requests made meanwhile are met by one more sync.
	q.Request(2, g.sync)
	// A claim while a sync runs is refused, and asks like a request.
	if q.Claim(3) {
		t.Fatal("Claim while a background sync runs = true, want false")
	}
	q.Request(2, g.sync) // already asked for
	waited := make(chan error)
	go func() { waited <- q.Wait(context.Background()) }()
	g.release <- nil
	<-g.entered
	g.release <- nil
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if err := q.Drain(); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if g.calls != 2 {
		t.Errorf("syncs = %d, want 2 (the first, and one covering the requests made during it)", g.calls)
	}
	if !q.Idle() {
		t.Error("a sync goroutine is left after Drain")
	}
	q.Synced(5)
	if err := q.Wait(context.Background()); err != nil {
		t.Errorf("Wait after Synced: %v", err)
	}
}

func TestErrorSticks(t *testing.T) {
	var q Queue
	g := newGate()
	q.Request(1, g.sync)
	<-g.entered
	boom := errors.New("disk gone")
	g.release <- boom
	if err := q.Wait(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Wait: %v, want the sync's error", err)
	}
	q.Request(2, g.sync) // starts nothing: the error stays
	for _, err := range []error{q.Err(), q.Drain(), q.Wait(context.Background())} {
		if !errors.Is(err, boom) {
			t.Errorf("after a failed sync: err = %v, want it", err)
		}
	}
	if g.calls != 1 {
		t.Errorf("syncs = %d, want 1", g.calls)
	}
}

func TestWaitStopsWithContext(t *testing.T) {
	var q Queue
	g := newGate()
	q.Request(1, g.sync)
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v, want context.Canceled", err)
	}
	g.release <- nil
	if err := q.Drain(); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func TestFailOnlyWithWaiters(t *testing.T) {
	var q Queue
	boom := errors.New("caller's own sync failed")
	q.Fail(boom) // nothing waits: a synchronous append's failure is its own
	if err := q.Err(); err != nil {
		t.Fatalf("Err after Fail with no request: %v, want nil", err)
	}
	g := newGate()
	q.Request(1, g.sync)
	<-g.entered
	q.Request(2, g.sync)
	q.Fail(boom)
	g.release <- nil // the sync of 1 succeeds, but 2 was asked for before the failure
	if err := q.Wait(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Wait: %v, want the caller's failure", err)
	}
	if err := q.Drain(); !errors.Is(err, boom) {
		t.Errorf("Drain: %v, want the caller's failure", err)
	}
}

// Requests that come faster than Gap share one sync; a waiter ends the
// pause at once, and Drain leaves no goroutine behind.
func TestGapGroupsSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := Queue{Gap: 10 * time.Millisecond}
		var mu sync.Mutex
		var times []time.Duration
		start := time.Now()
		record := func() error {
			mu.Lock()
			defer mu.Unlock()
			times = append(times, time.Since(start))
			return nil
		}
		calls := func() []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Duration(nil), times...)
		}
		q.Request(1, record) // synced at once: no sync before it
		synctest.Wait()
		for i := int64(2); i <= 5; i++ {
			time.Sleep(time.Millisecond)
			q.Request(i, record) // within the gap: waits for it
		}
		synctest.Wait()
		if diff := cmp.Diff([]time.Duration{0}, calls()); diff != "" {
			t.Fatalf("syncs before the gap passed (-want +got):\n%s", diff)
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff([]time.Duration{0, 10 * time.Millisecond}, calls()); diff != "" {
			t.Fatalf("syncs at the gap's end (-want +got):\n%s", diff)
		}
		// A waiter does not wait for the gap.
		q.Request(6, record)
		if err := q.Wait(context.Background()); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if diff := cmp.Diff([]time.Duration{0, 10 * time.Millisecond, 14 * time.Millisecond}, calls()); diff != "" {
			t.Errorf("Wait's sync (-want +got):\n%s", diff)
		}
		q.Request(7, record)
		if err := q.Drain(); err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if n := len(calls()); n != 4 || !q.Idle() {
			t.Errorf("after Drain: %d syncs, idle %v; want 4, idle", n, q.Idle())
		}
	})
}

// A sync the caller made itself counts for the gap: the background sync
// a request asks for right after it starts when the gap has passed. The
// test waits for that sync on a channel; the bubble's clock moves to the
// gap's end once every goroutine is blocked.
func TestCallersSyncStartsTheGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := Queue{Gap: 10 * time.Millisecond}
		start := time.Now()
		synced := make(chan time.Duration)
		q.Synced(1)
		q.Request(2, func() error {
			synced <- time.Since(start)
			return nil
		})
		if at := <-synced; at != q.Gap {
			t.Errorf("background sync %v after the caller's, want %v (the gap)", at, q.Gap)
		}
		if err := q.Drain(); err != nil {
			t.Fatal(err)
		}
	})
}

// A caller that claims an idle queue's sync runs it itself: no other
// sync starts beside it, Drain waits for it, and the requests made while
// it runs are met by a background sync after it.
func TestClaimedSyncRunsOnTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue
		g := newGate()
		if !q.Claim(1) {
			t.Fatal("Claim of an idle queue = false, want true")
		}
		claimed := make(chan error)
		go func() { claimed <- q.SyncClaimed(g.sync) }()
		<-g.entered // the claimed sync of 1 runs
		if q.Claim(2) {
			t.Fatal("Claim while a claimed sync runs = true, want false")
		}
		q.Request(3, g.sync) // starts no goroutine beside the claimed sync
		drained := make(chan error)
		go func() { drained <- q.Drain() }()
		synctest.Wait()
		select {
		case err := <-drained:
			t.Fatalf("Drain returned %v while the claimed sync ran", err)
		default:
		}
		g.release <- nil
		if err := <-claimed; err != nil {
			t.Fatalf("SyncClaimed: %v", err)
		}
		<-g.entered // the background sync of what was asked meanwhile
		g.release <- nil
		if err := <-drained; err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if err := q.Wait(context.Background()); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if g.calls != 2 {
			t.Errorf("syncs = %d, want 2 (the claimed one and one after it)", g.calls)
		}
		if q.Claim(3) {
			t.Error("Claim of what is already synced = true, want false")
		}
	})
}

// A claimed sync that fails is kept like a background one, and no
// background sync starts after it.
func TestClaimedSyncErrorSticks(t *testing.T) {
	var q Queue
	boom := errors.New("disk gone")
	if !q.Claim(1) {
		t.Fatal("Claim of an idle queue = false, want true")
	}
	q.Request(2, func() error {
		t.Error("a background sync started beside the claimed one")
		return nil
	})
	if err := q.SyncClaimed(func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("SyncClaimed: %v, want the sync's error", err)
	}
	if q.Claim(3) {
		t.Error("Claim after a failed sync = true, want false")
	}
	for _, err := range []error{q.Err(), q.Wait(context.Background()), q.Drain()} {
		if !errors.Is(err, boom) {
			t.Errorf("after a failed claimed sync: err = %v, want it", err)
		}
	}
	if !q.Idle() {
		t.Error("a sync goroutine runs after a failed claimed sync")
	}
}
