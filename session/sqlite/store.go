package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/internal/opened"
	"github.com/reinhq/rein/session/internal/proc"
	"github.com/reinhq/rein/session/internal/syncq"
)

// Durability says when a commit is forced to stable storage. It maps to
// PRAGMA synchronous: DurabilityStep (the default) commits with
// synchronous=NORMAL and syncs the write-ahead log on a commit that ends
// a step or a turn (holds a step.end or turn.end event);
// DurabilityAlways is synchronous=FULL for every commit; DurabilityNever
// is synchronous=OFF, so a crash of the machine may lose recent commits.
type Durability = session.Durability

// The Durability settings, the same as session's.
const (
	DurabilityStep   = session.DurabilityStep
	DurabilityAlways = session.DurabilityAlways
	DurabilityNever  = session.DurabilityNever
)

// Options configures a Store. A nil *Options is the zero value.
type Options struct {
	// Durability says when commits are synced; zero is DurabilityStep.
	Durability Durability
	// Logger receives repairs; nil discards.
	Logger *slog.Logger
	// Now is the clock for created times, locks and repair events; nil is time.Now.
	Now func() time.Time
	// BusyTimeout is how long a statement waits for another process's
	// write to finish; zero is 10 seconds.
	BusyTimeout time.Duration
}

// Store keeps every session in one SQLite database. It is safe for
// concurrent use, and several processes may share the database file.
type Store struct {
	path string
	opts Options
	log  *slog.Logger
	now  func() time.Time
	db   *sql.DB

	owner string // random token naming this Store in the locks table
	host  string
	pid   int
	start int64

	wmu     sync.Mutex // guards w and commits: every write goes through one connection
	w       *sql.Conn
	commits int64 // commits made through w, counted for bg

	wal string      // the write-ahead log's file; empty if the database is not in WAL mode
	bg  syncq.Queue // the background sync of the WAL for AppendAsync
	// Prepared once on w, for appends: begin, commit, set a session's
	// last seq and updated time; insRows[n-1] inserts n events, prepared
	// when first needed. args and data are reused by every insert.
	begin, end, updSes *sql.Stmt
	insRows            [maxRows]*sql.Stmt
	args               []any
	data               []byte

	sessions opened.Sessions[state]

	subs session.Broadcaster // wakes Subscribe's channels after appends
}

// state is what the Store knows of a session it has opened.
type state struct {
	mu      sync.Mutex
	checked bool // checked for an open tail turn in this Store
	held    bool // this Store holds the session's append lock
	lastSeq int64
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A database written by a newer rein is refused with
// an error wrapping session.ErrUnsupported.
func Open(path string, opts *Options) (*Store, error) {
	s := &Store{path: path, pid: os.Getpid()}
	s.bg.Gap = syncq.DefaultGap
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
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: open %s: a path may not contain '?'", path)
	}
	busy := s.opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	var b [12]byte
	rand.Read(b[:])
	s.owner = hex.EncodeToString(b[:])
	s.host, _ = os.Hostname()
	s.start, _ = proc.Start(s.pid)

	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=mmap_size(268435456)&_txlock=immediate",
		path, busy.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.db = db
	ctx := context.Background()
	w, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.w = w
	if err := migrate(ctx, w, path); err != nil {
		w.Close()
		db.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		w.Close()
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// prepare sets the write connection's synchronous mode, finds the
// write-ahead log and prepares the statements every append runs.
func (s *Store) prepare(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, "PRAGMA synchronous = "+s.baseSync()); err != nil {
		return err
	}
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if strings.EqualFold(mode, "wal") {
		s.wal = s.path + "-wal"
	}
	var err error
	if s.begin, err = s.w.PrepareContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if s.end, err = s.w.PrepareContext(ctx, "COMMIT"); err != nil {
		return err
	}
	s.updSes, err = s.w.PrepareContext(ctx, `UPDATE sessions SET last_seq = ?, updated = ? WHERE id = ?`)
	return err
}

// baseSync is the synchronous setting of an ordinary commit.
func (s *Store) baseSync() string {
	switch s.opts.Durability {
	case DurabilityAlways:
		return "FULL"
	case DurabilityNever:
		return "OFF"
	}
	return "NORMAL"
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// DB returns the database, for queries across sessions. Writing to it
// bypasses the Store's checks.
func (s *Store) DB() *sql.DB { return s.db }

func (s *Store) get(id session.ID) (*state, error) {
	return s.sessions.Get(id, func() *state { return &state{} })
}

func (s *Store) isClosed() bool { return s.sessions.Closed() }

// write runs fn in one immediate transaction on the write connection,
// synced if sync is set and the durability setting would not sync anyway:
// in the commit, or after it in the background if async.
func (s *Store) write(ctx context.Context, sync, async bool, fn func(tx *sql.Tx) error) error {
	return s.commit(ctx, sync, async, func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// commit runs txn, which commits one transaction on the write
// connection, synced as write says, and counts the commit for the
// background sync.
func (s *Store) commit(ctx context.Context, sync, async bool, txn func() error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w == nil {
		return session.ErrClosed
	}
	step := s.opts.Durability == DurabilityStep
	raise := sync && step && !async
	if raise {
		if _, err := s.w.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
			return err
		}
		defer s.w.ExecContext(context.Background(), "PRAGMA synchronous = NORMAL")
	}
	if err := txn(); err != nil {
		return err
	}
	s.commits++
	switch {
	case sync && step && async:
		s.bg.Request(s.commits, s.syncWAL)
	case raise || s.opts.Durability == DurabilityAlways:
		s.bg.Synced(s.commits) // a synced commit syncs the log before it too
	}
	return nil
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// Create adds a session.
func (s *Store) Create(ctx context.Context, req *session.CreateRequest) (session.ID, error) {
	if req == nil {
		req = &session.CreateRequest{}
	}
	if s.isClosed() {
		return "", session.ErrClosed
	}
	now := s.now()
	id := req.ID
	if id == "" {
		id = session.NewID()
	}
	if err := session.CheckID(id); err != nil {
		return "", err
	}
	meta := req.Meta
	if meta == nil {
		meta = map[string]string{}
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return "", fmt.Errorf("sqlite: create %q: %w", id, err)
	}
	err = s.write(ctx, true, false, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO sessions (id, created, updated, workdir, parent, meta) VALUES (?, ?, ?, ?, ?, ?)`,
			string(id), now.UnixNano(), now.UnixNano(), req.WorkDir, string(req.Parent), string(mb))
		return err
	})
	if c := sqliteCode(err); c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		return "", fmt.Errorf("sqlite: create %q: %w", id, session.ErrExists)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: create %q: %w", id, err)
	}
	return id, nil
}

// Delete removes session id and its events. It fails with
// session.ErrLocked if another live process or Store is appending to it.
func (s *Store) Delete(ctx context.Context, id session.ID) error {
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	err = s.write(ctx, true, false, func(tx *sql.Tx) error {
		h, locked, err := s.lockHolder(ctx, tx, id)
		if err != nil {
			return err
		}
		if locked {
			return fmt.Errorf("sqlite: delete %q: held by %s; wait for it to finish or stop it: %w", id, h, session.ErrLocked)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, string(id))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrLocked) || errors.Is(err, session.ErrClosed) {
			return err
		}
		return fmt.Errorf("sqlite: delete %q: %w", id, err)
	}
	s.sessions.Forget(id, st)
	st.held, st.checked = false, false
	return nil
}

// Close waits for the background syncs of AppendAsync, returning the
// error of one that failed, releases the Store's locks and closes the
// database. It is idempotent; the Store is unusable afterwards.
func (s *Store) Close() error {
	if _, first := s.sessions.Close(); !first {
		return nil
	}
	s.subs.Close()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Under wmu no commit can start another background sync.
	errs := []error{s.bg.Drain()}
	if _, err := s.w.ExecContext(context.Background(), `DELETE FROM locks WHERE owner = ?`, s.owner); err != nil {
		errs = append(errs, fmt.Errorf("sqlite: close: release locks: %w", err))
	}
	errs = append(errs, s.begin.Close(), s.end.Close(), s.updSes.Close(), s.closeInserts(), s.w.Close())
	s.w = nil
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

var _ session.Store = (*Store)(nil)
