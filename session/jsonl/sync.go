package jsonl

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/reinhq/rein/session"
)

// syncer forces one session file to stable storage off the appender's
// path. Appends say how far the file must be synced (want, in bytes); a
// goroutine, started when there is work and gone when there is none,
// fsyncs until done catches up. One fsync covers every byte written
// before it, so a burst of requests costs one or two fsyncs.
type syncer struct {
	mu      sync.Mutex
	want    int64 // bytes that must reach stable storage
	done    int64 // bytes known to be on stable storage
	err     error // the first failed fsync; kept, since the file's state is then unknown
	running bool
	wake    chan struct{} // closed and replaced when done, err or running change
}

func (y *syncer) lock()   { y.mu.Lock() }
func (y *syncer) unlock() { y.mu.Unlock() }

func newSyncer() *syncer { return &syncer{wake: make(chan struct{})} }

// signal wakes every waiter; y is locked.
func (y *syncer) signal() {
	close(y.wake)
	y.wake = make(chan struct{})
}

// request asks for the first n bytes of f to be synced in the background.
// The caller holds the session's lock, so f stays open until drain.
func (y *syncer) request(f *os.File, n int64) {
	y.lock()
	defer y.unlock()
	if n <= y.want {
		return
	}
	y.want = n
	if y.running || y.err != nil {
		return
	}
	y.running = true
	go y.run(f)
}

// run fsyncs f until every requested byte is synced or an fsync fails.
func (y *syncer) run(f *os.File) {
	for {
		y.lock()
		if y.err != nil || y.done >= y.want {
			y.running = false
			y.signal()
			y.unlock()
			return
		}
		target := y.want
		y.unlock()
		err := f.Sync()
		y.lock()
		if err != nil {
			y.err = fmt.Errorf("sync %s: %w; appends since the last sync may not survive a crash of the machine, reopen the store to check the file", f.Name(), err)
		} else {
			y.done = max(y.done, target)
		}
		y.signal()
		y.unlock()
	}
}

// synced records that the first n bytes were synced by the appender.
func (y *syncer) synced(n int64) {
	y.lock()
	defer y.unlock()
	y.done = max(y.done, n)
	y.want = max(y.want, n)
}

// failed returns the error of a failed background fsync, if any.
func (y *syncer) failed() error {
	y.lock()
	defer y.unlock()
	return y.err
}

// wait returns once every requested byte is synced, an fsync failed (its
// error), or ctx is done.
func (y *syncer) wait(ctx context.Context) error {
	for {
		y.lock()
		if y.err != nil || y.done >= y.want {
			err := y.err
			y.unlock()
			return err
		}
		ch := y.wake
		y.unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// drain waits until the goroutine, if any, has stopped, and returns the
// error of a failed fsync.
func (y *syncer) drain() error {
	for {
		y.lock()
		if !y.running {
			err := y.err
			y.unlock()
			return err
		}
		ch := y.wake
		y.unlock()
		<-ch
	}
}

// AppendAsync is Append whose fsync, when the store's Durability calls
// for one, runs in the background: the events are written to the file
// (so a crash of this process loses none of them) before it returns, and
// Sync waits for them to reach stable storage. A failed background fsync
// is returned by the next Sync, Append, AppendAsync or Close of the
// session, and by every one after it: the file's state on disk is then
// unknown until the store is reopened. See session.Syncer.
func (s *Store) AppendAsync(ctx context.Context, id session.ID, events ...session.Event) error {
	return s.append(ctx, id, events, true)
}

// Sync returns once every event appended to session id so far is as
// durable as the store's Durability promises: with DurabilityStep, up to
// the last append that ended a step or a turn; with DurabilityAlways,
// all of them; with DurabilityNever it returns at once.
func (s *Store) Sync(ctx context.Context, id session.ID) error {
	if err := validID(id); err != nil {
		return fmt.Errorf("%w: %w", err, session.ErrNotFound)
	}
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	appending := st.f != nil
	st.mu.Unlock()
	if !appending {
		// Nothing was appended through this Store.
		if _, err := os.Stat(s.Path(id)); err != nil {
			return notFound(id, err)
		}
		return nil
	}
	if err := st.sync.wait(ctx); err != nil {
		return fmt.Errorf("jsonl: session %q: %w", id, err)
	}
	return nil
}

var _ session.Syncer = (*Store)(nil)
