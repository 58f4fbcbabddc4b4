package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/reinhq/rein/session"
)

// syncWAL forces the write-ahead log to stable storage, as a commit at
// synchronous=FULL would: one fsync covers every frame written before
// it, each commit's frames ending in its commit record. A log that is
// not there was checkpointed into the database, which SQLite syncs
// first. The queue s.bg runs it one call at a time, on its goroutine or
// on a caller's that claimed the sync, so the log's file, opened the
// first time, is kept for the next: SQLite keeps the log's file while
// any connection is open, and the Store's write connection is open until
// Close, which closes the file after the last sync.
func (s *Store) syncWAL() error {
	if s.wal == "" {
		return nil // not in WAL mode: every commit syncs itself
	}
	var err error
	if s.walf == nil {
		s.walf, err = os.Open(s.wal)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	if err == nil {
		err = s.walf.Sync()
	}
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: %w; commits since the last sync may not survive a crash of the machine, reopen the store to check the database", s.wal, err)
	}
	return nil
}

// AppendAsync is Append whose sync, for a batch that ends a step or a
// turn under DurabilityStep, runs after the commit in the background: the
// commit, at synchronous=NORMAL, is in the write-ahead log before it
// returns (a crash of this process loses none of it), and Sync waits for
// the log's fsync. Under DurabilityAlways every commit syncs itself, and
// under DurabilityNever nothing is synced, so there it is Append. A
// failed background sync is returned by Sync, Append, AppendAsync and
// Close from then on. See session.Syncer.
func (s *Store) AppendAsync(ctx context.Context, id session.ID, events ...session.Event) error {
	return s.append(ctx, id, events, true)
}

// Sync returns once every commit made through this Store so far, and so
// every event appended to session id, is as durable as the store's
// Durability promises.
func (s *Store) Sync(ctx context.Context, id session.ID) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	if s.holds(id) {
		// Nobody else can delete a session this Store holds.
		return s.bg.Wait(ctx)
	}
	err := s.readable()
	if err == nil {
		var one int
		err = s.db.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, string(id)).Scan(&one)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
	}
	if err != nil {
		if s.isClosed() {
			return session.ErrClosed
		}
		return fmt.Errorf("sqlite: sync session %q: %w", id, err)
	}
	return s.bg.Wait(ctx)
}

// holds reports whether this Store holds the append lock of id.
func (s *Store) holds(id session.ID) bool {
	st := s.sessions.Peek(id)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held
}

var _ session.Syncer = (*Store)(nil)
