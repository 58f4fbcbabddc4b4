// Package syncq takes a durable store's syncs off the appender's path.
//
// A Queue counts what a store has written with a number that only grows
// (bytes of a file, commits of a database). An appender that wants the
// first n of it on stable storage calls Request; a goroutine, started
// when there is work and gone when there is none, runs the store's sync
// until every request is met, and one sync covers every request made
// before it began. Syncs are grouped: after one, the goroutine lets Gap
// pass before the next, so appends that come faster than that share one
// sync, unless Wait or Drain is waiting, which starts it at once. Wait
// blocks until the requests so far are met. An appender that would
// request a sync and wait for it may Claim it instead and, when no sync
// is running, run it on its own goroutine (SyncClaimed). A failed sync
// is kept: Err, Wait and Drain return it from then on, since
// after a failed fsync the kernel may have dropped the dirty pages and a
// later sync that succeeds proves nothing.
package syncq

import (
	"context"
	"sync"
	"time"
)

// DefaultGap is the Gap the stores use: short beside a model request, so
// an agent's steps are synced one by one, and long beside a fast loop's
// step, whose syncs it groups.
const DefaultGap = 5 * time.Millisecond

// Queue is the background sync of one store or file. The zero Queue is
// ready to use; it syncs as soon as asked.
type Queue struct {
	// Gap is the least time from the start of one sync (in the
	// background, claimed, or the caller's own that Synced records) to
	// the start of the next background sync nobody waits for: what a
	// crash of the machine may lose beyond the sync in progress. Set it
	// before first use.
	Gap time.Duration

	mu      sync.Mutex
	last    time.Time     // when the last sync began
	waiters int           // calls of Wait and Drain waiting
	hurry   chan struct{} // closed when a waiter arrives, to end a Gap early
	want    int64         // what must reach stable storage
	done    int64         // what is known to be on stable storage
	err     error
	running bool          // the goroutine runs, or a caller runs the sync it claimed
	wake    chan struct{} // closed and replaced when done, err or running change
}

// signal wakes every waiter; q.mu is held.
func (q *Queue) signal() {
	if q.wake != nil {
		close(q.wake)
	}
	q.wake = make(chan struct{})
}

// waitCh returns the channel the next change closes; q.mu is held.
func (q *Queue) waitCh() <-chan struct{} {
	if q.wake == nil {
		q.wake = make(chan struct{})
	}
	return q.wake
}

// Request asks for the first n to be synced in the background by sync,
// which must cover everything written before it is called. The caller
// keeps what sync uses open until Drain returns.
func (q *Queue) Request(n int64, sync func() error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n <= q.want {
		return
	}
	q.want = n
	if q.running || q.err != nil {
		return
	}
	q.running = true
	go q.run(sync)
}

// run syncs until every request is met or a sync fails.
func (q *Queue) run(sync func() error) {
	for {
		q.mu.Lock()
		if q.err != nil || q.done >= q.want {
			q.running = false
			q.signal()
			q.mu.Unlock()
			return
		}
		if wait := q.Gap - time.Since(q.last); wait > 0 && q.waiters == 0 {
			q.pause(wait)
			continue
		}
		target := q.want
		q.last = time.Now()
		q.mu.Unlock()
		err := sync()
		q.mu.Lock()
		if err != nil {
			q.err = err
		} else {
			q.done = max(q.done, target)
		}
		q.signal()
		q.mu.Unlock()
	}
}

// pause waits, with q.mu held and released on return, for d to pass or a
// waiter to arrive.
func (q *Queue) pause(d time.Duration) {
	if q.hurry == nil {
		q.hurry = make(chan struct{})
	}
	hurry := q.hurry
	q.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-hurry:
	}
}

// arrive counts a waiter and ends a pause in progress; q.mu is held.
func (q *Queue) arrive() {
	q.waiters++
	if q.hurry != nil {
		close(q.hurry)
		q.hurry = nil
	}
}

// Claim asks for the first n to be synced and reports whether the
// caller is to run that sync itself, through SyncClaimed: true when no
// sync is running, and the queue then counts the caller's as running, so
// no background sync starts beside it and Drain waits for it. When it
// reports false, a running sync or the one after it covers n: wait for
// it with Wait. A caller that waits anyway spares itself, by syncing on
// its own goroutine, the hand-off to a background one and back.
func (q *Queue) Claim(n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.want = max(q.want, n)
	if q.running || q.err != nil || q.done >= n {
		return false
	}
	q.running = true
	return true
}

// SyncClaimed runs sync, which must cover everything written before it
// is called, for the caller whose Claim reported true, and returns its
// error, which is kept as a failed sync. Requests made while it ran are
// met by a background sync after it.
func (q *Queue) SyncClaimed(sync func() error) error {
	q.mu.Lock()
	target := q.want
	q.last = time.Now()
	q.mu.Unlock()
	err := sync()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.err = err
	} else {
		q.done = max(q.done, target)
	}
	q.running = q.err == nil && q.done < q.want
	if q.running {
		go q.run(sync)
	}
	q.signal()
	return err
}

// Synced records that the caller synced the first n itself, just now:
// the next background sync nobody waits for comes Gap after it.
func (q *Queue) Synced(n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.last = time.Now()
	q.done = max(q.done, n)
	q.want = max(q.want, n)
}

// Fail records err, from a sync the caller ran itself, as a failed sync
// if requests are waiting for one: what they asked for may then never
// reach stable storage, however a later sync ends.
func (q *Queue) Fail(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil && q.want > q.done {
		q.err = err
		q.signal()
	}
}

// Err returns the error of a failed sync, if any.
func (q *Queue) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Wait returns once every request so far is met, with the error of a
// failed sync, or ctx's error when it is done first.
func (q *Queue) Wait(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	target := q.want
	if q.err != nil || q.done >= target {
		return q.err
	}
	q.arrive()
	defer func() { q.waiters-- }() // before the deferred Unlock
	for q.err == nil && q.done < target {
		ch := q.waitCh()
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			q.mu.Lock()
			return ctx.Err()
		case <-ch:
		}
		q.mu.Lock()
	}
	return q.err
}

// Drain waits until the goroutine, if any, has stopped, and returns the
// error of a failed sync. A sync it is pausing for runs at once.
func (q *Queue) Drain() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running {
		q.arrive()
		defer func() { q.waiters-- }() // before the deferred Unlock
	}
	for q.running {
		ch := q.waitCh()
		q.mu.Unlock()
		<-ch
		q.mu.Lock()
	}
	return q.err
}

// Idle reports whether no sync is running.
func (q *Queue) Idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.running
}
