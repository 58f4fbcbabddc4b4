package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/internal/opened"
	"github.com/reinhq/rein/session/internal/syncq"
)

// Durability says when an append is forced to stable storage: the
// store fsyncs the session file after a batch holding a step.end or
// turn.end (DurabilityStep, the default), after every batch
// (DurabilityAlways) or never (DurabilityNever).
type Durability = session.Durability

// The Durability settings, the same as session's.
const (
	DurabilityStep   = session.DurabilityStep
	DurabilityAlways = session.DurabilityAlways
	DurabilityNever  = session.DurabilityNever
)

// Options configures a Store. A nil *Options is the zero value.
type Options struct {
	// Durability says when appends are synced; zero is DurabilityStep.
	Durability Durability
	// Logger receives repairs and truncations; nil discards.
	Logger *slog.Logger
	// Now is the clock for headers, locks and repair events; nil is time.Now.
	Now func() time.Time
	// ReadOnly opens the directory for reading only: sessions are never
	// locked, truncated or repaired, and the methods that write return an
	// error. A torn or uncommitted tail is then skipped, not removed.
	ReadOnly bool
}

// Store keeps each session in its own JSONL file in one directory. It is
// safe for concurrent use, and several processes may read one directory
// while one of them appends to a session.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	now  func() time.Time

	sessions opened.Sessions[state]

	subs session.Broadcaster // wakes Subscribe's channels after appends
}

// state is what the Store knows of one session it has opened.
type state struct {
	id session.ID
	mu sync.Mutex // serializes opening, appends and metadata updates

	checked bool     // the file was scanned and repaired under the lock
	f       *os.File // the data file, open for appending and holding its lock, from the first Append until Close or Delete
	hdr     *header
	lastSeq int64
	updated time.Time
	buf     []byte
	sync    syncq.Queue // the background fsync of appends by AppendAsync

	size  atomic.Int64 // committed bytes; readers stop there while lock is held
	cur   atomic.Pointer[cursor]
	marks marks
	held  atomic.Bool // lock != nil, for readers that do not take mu
}

// Open opens the session directory dir, creating it if needed.
func Open(dir string, opts *Options) (*Store, error) {
	s := &Store{dir: dir}
	if opts != nil {
		s.opts = *opts
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.now = s.opts.Now
	if s.now == nil {
		s.now = time.Now
	}
	if s.opts.ReadOnly {
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("jsonl: open %s: %w", dir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("jsonl: open %s: not a directory", dir)
		}
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jsonl: open %s: %w", dir, err)
	}
	return s, nil
}

// Dir returns the directory the store keeps its files in.
func (s *Store) Dir() string { return s.dir }

// Path returns the file that holds session id.
func (s *Store) Path(id session.ID) string { return filepath.Join(s.dir, string(id)+".jsonl") }

func (s *Store) lockPath(id session.ID) string { return filepath.Join(s.dir, string(id)+".lock") }

func (s *Store) metaPath(id session.ID) string { return filepath.Join(s.dir, string(id)+".meta.json") }

// validID reports whether id can name a session file.
func validID(id session.ID) error { return session.CheckID(id) }

func (s *Store) writable(op string) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("jsonl: %s: the store was opened read-only; open it without ReadOnly to write", op)
	}
	return nil
}

// get returns the state of id, making it if needed.
func (s *Store) get(id session.ID) (*state, error) {
	return s.sessions.Get(id, func() *state {
		st := &state{id: id}
		st.sync.Gap = syncq.DefaultGap
		return st
	})
}

// known returns the state of session id; an id no file can have is a
// session that is not found.
func (s *Store) known(id session.ID) (*state, error) {
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", err, session.ErrNotFound)
	}
	return s.get(id)
}

// Create starts a new session file with its header.
func (s *Store) Create(ctx context.Context, req *session.CreateRequest) (session.ID, error) {
	if err := s.writable("create"); err != nil {
		return "", err
	}
	if req == nil {
		req = &session.CreateRequest{}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if s.sessions.Closed() {
		return "", session.ErrClosed
	}
	now := s.now()
	id := req.ID
	if id == "" {
		id = session.NewID()
	}
	if err := validID(id); err != nil {
		return "", err
	}
	h := header{Format: formatName, Version: formatVersion, ID: id, Created: now, WorkDir: req.WorkDir, Parent: req.Parent, Meta: req.Meta}
	b, err := json.Marshal(&h)
	if err != nil {
		return "", fmt.Errorf("jsonl: create %q: %w", id, err)
	}
	b = append(b, '\n')
	path := s.Path(id)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("jsonl: create %q: %w", id, session.ErrExists)
	}
	if err != nil {
		return "", fmt.Errorf("jsonl: create %q: %w", id, err)
	}
	_, err = f.Write(b)
	if err == nil && s.opts.Durability != DurabilityNever {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && s.opts.Durability != DurabilityNever {
		err = syncDir(s.dir)
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("jsonl: create %q: %w", id, err)
	}
	if s.opts.Durability != DurabilityNever {
		// The file was just synced: the first background sync of its
		// appends comes a gap after it, as after any other.
		if st, err := s.get(id); err == nil {
			st.sync.Synced(int64(len(b)))
		}
	}
	return id, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// notFound turns a missing file into session.ErrNotFound.
func notFound(id session.ID, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("jsonl: session %q: %w", id, session.ErrNotFound)
	}
	return err
}

// Delete removes session id's files. It fails with session.ErrLocked if
// another process or Store is appending to it.
func (s *Store) Delete(ctx context.Context, id session.ID) error {
	if err := s.writable("delete"); err != nil {
		return err
	}
	st, err := s.known(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := os.Stat(s.Path(id)); err != nil {
		return notFound(id, err)
	}
	lock := st.f
	if lock == nil {
		if lock, _, err = s.takeLock(ctx, id, true); err != nil {
			return err
		}
	}
	st.sync.Drain() // the file goes: a failed sync of it no longer matters
	err = os.Remove(s.Path(id))
	os.Remove(s.metaPath(id))
	unlockSession(lock, s.lockPath(id))
	st.f, st.checked = nil, false
	st.held.Store(false)
	s.sessions.Forget(id, st)
	if err != nil {
		return notFound(id, err)
	}
	if s.opts.Durability != DurabilityNever {
		syncDir(s.dir)
	}
	return nil
}

// Close waits for the background syncs of AppendAsync, returning the
// error of any that failed, and releases every lock the Store holds. It
// is idempotent; the Store is unusable afterwards.
func (s *Store) Close() error {
	states, first := s.sessions.Close()
	if !first {
		return nil
	}
	s.subs.Close()
	var errs []error
	for _, st := range states {
		st.mu.Lock()
		if err := st.sync.Drain(); err != nil {
			errs = append(errs, fmt.Errorf("jsonl: session %q: %w", st.id, err))
		}
		errs = append(errs, unlockSession(st.f, s.lockPath(st.id)))
		st.f = nil
		st.held.Store(false)
		st.mu.Unlock()
	}
	return errors.Join(errs...)
}

var _ session.Store = (*Store)(nil)
