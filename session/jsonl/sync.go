package jsonl

import (
	"context"
	"fmt"
	"os"

	"github.com/reinhq/rein/session"
)

// syncFile returns the background sync of f for a syncq.Queue.
func syncFile(f *os.File) func() error {
	return func() error {
		if err := f.Sync(); err != nil {
			return syncFailed(f, err)
		}
		return nil
	}
}

func syncFailed(f *os.File, err error) error {
	return fmt.Errorf("sync %s: %w; appends since the last sync may not survive a crash of the machine, reopen the store to check the file", f.Name(), err)
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
	st, err := s.known(id)
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
	if err := st.sync.Wait(ctx); err != nil {
		return fmt.Errorf("jsonl: session %q: %w", id, err)
	}
	return nil
}

var _ session.Syncer = (*Store)(nil)
