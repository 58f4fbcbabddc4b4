package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
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

	wal  string      // the write-ahead log's file; empty if the database is not in WAL mode
	walf *os.File    // wal, opened by the first sync
	bg   syncq.Queue // the background sync of the WAL
	// Prepared once on w: begin, commit; add a session (insSes), read its
	// last seq and lock (openSes), take its lock (lockSes), set its last
	// seq and updated time (updSes); insRows[n-1] inserts n events,
	// prepared when first needed. args and data are reused by every
	// insert.
	begin, end                       *sql.Stmt
	insSes, openSes, lockSes, updSes *sql.Stmt
	insRows                          [maxRows]driver.StmtExecContext
	args                             []driver.NamedValue
	data                             []byte

	sessions opened.Sessions[state]

	subs session.Broadcaster // wakes Subscribe's channels after appends
}

// state is what the Store knows of a session it has opened.
type state struct {
	mu      sync.Mutex
	checked bool  // checked for an open tail turn in this Store
	held    bool  // this Store holds the session's append lock
	num     int64 // the session's number, the high bits of its events' keys; set once checked
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
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&s.begin, "BEGIN IMMEDIATE"},
		{&s.end, "COMMIT"},
		{&s.insSes, `INSERT INTO sessions (id, created, updated, workdir, parent, meta) VALUES (?, ?, ?, ?, ?, ?)`},
		{&s.openSes, openingQuery},
		{&s.lockSes, `INSERT OR REPLACE INTO locks (session, owner, pid, host, started, since) VALUES (?, ?, ?, ?, ?, ?)`},
		{&s.updSes, `UPDATE sessions SET last_seq = ?, updated = ? WHERE num = ?`},
	} {
		st, err := s.w.PrepareContext(ctx, p.q)
		if err != nil {
			return err
		}
		*p.st = st
	}
	return nil
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
// bypasses the Store's checks. The Store keeps one of its pool's
// connections for its writes and a read takes another, so a limit set
// with SetMaxOpenConns must allow two; with one, reads fail.
func (s *Store) DB() *sql.DB { return s.db }

// errOneConn is the error of a read on a pool limited to the one
// connection the writer keeps, which it would wait for until Close.
var errOneConn = errors.New("the database's pool is limited to one connection, which the Store keeps for its writes; allow two with DB().SetMaxOpenConns(2)")

// readable returns errOneConn if a read could never have a connection.
func (s *Store) readable() error {
	if s.db.Stats().MaxOpenConnections == 1 {
		return errOneConn
	}
	return nil
}

func (s *Store) get(id session.ID) (*state, error) {
	return s.sessions.Get(id, func() *state { return &state{} })
}

func (s *Store) isClosed() bool { return s.sessions.Closed() }

// conn is what a write's statements run on: the write connection, inside
// the transaction write began.
type conn interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	Raw(f func(driverConn any) error) error
}

// write runs fn in one immediate transaction on the write connection,
// synced if sync is set and the durability setting would not sync anyway:
// before it returns, or after it in the background if async.
func (s *Store) write(ctx context.Context, sync, async bool, fn func(c conn) error) error {
	return s.commit(ctx, sync, async, func() error { return s.inTx(ctx, func() error { return fn(s.w) }) })
}

// inTx runs fn between the write connection's prepared BEGIN IMMEDIATE
// and COMMIT, and rolls back if anything fails. It takes no database/sql
// transaction, whose watcher goroutine and per-statement copies would
// cost every write. s.wmu is held.
func (s *Store) inTx(ctx context.Context, fn func() error) error {
	if _, err := s.begin.ExecContext(ctx); err != nil {
		return err
	}
	err := fn()
	if err == nil {
		_, err = s.end.ExecContext(ctx)
	}
	if err != nil {
		// Whatever failed, leave no transaction open on the connection.
		s.w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return err
}

// commit runs txn, which commits one transaction on the write
// connection, and counts the commit for the background sync. If sync is
// set under DurabilityStep it asks for the write-ahead log's fsync, which
// covers every commit before it, and waits for it unless async: a commit
// at synchronous=NORMAL followed by that fsync is what
// synchronous=FULL would do, without two statements to switch it. A
// wait runs the fsync itself when no other is running, sparing the
// hand-offs to the background goroutine and back; either way the write
// connection is free for other commits while it runs. Under
// DurabilityAlways every commit syncs itself.
func (s *Store) commit(ctx context.Context, sync, async bool, txn func() error) error {
	s.wmu.Lock()
	if s.w == nil {
		s.wmu.Unlock()
		return session.ErrClosed
	}
	if err := txn(); err != nil {
		s.wmu.Unlock()
		return err
	}
	s.commits++
	wait, own := false, false
	switch {
	case s.opts.Durability == DurabilityAlways:
		s.bg.Synced(s.commits) // a synced commit syncs the log before it too
	case sync && s.opts.Durability == DurabilityStep && async:
		s.bg.Request(s.commits, s.syncWAL)
	case sync && s.opts.Durability == DurabilityStep:
		// Claimed under wmu, so Close's Drain waits for the fsync.
		wait, own = true, s.bg.Claim(s.commits)
	}
	s.wmu.Unlock()
	switch {
	case own:
		return s.bg.SyncClaimed(s.syncWAL)
	case wait:
		// The commit is made: a cancelled caller still gets its sync.
		return s.bg.Wait(context.WithoutCancel(ctx))
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
	// One statement, which SQLite runs as a transaction of its own.
	err = s.commit(ctx, true, false, func() error {
		_, err := s.insSes.ExecContext(ctx, string(id), now.UnixNano(), now.UnixNano(), req.WorkDir, string(req.Parent), string(mb))
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
	err = s.write(ctx, true, false, func(c conn) error {
		num, _, h, err := s.opening(ctx, id)
		if err != nil {
			return err
		}
		if s.liveElsewhere(h) {
			return fmt.Errorf("sqlite: delete %q: held by %s; wait for it to finish or stop it: %w", id, h, session.ErrLocked)
		}
		after, before := keysOf(num)
		if _, err = c.ExecContext(ctx, `DELETE FROM events WHERE key > ? AND key < ?`, after, before); err != nil {
			return err
		}
		_, err = c.ExecContext(ctx, `DELETE FROM sessions WHERE num = ?`, num)
		return err
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
	if s.walf != nil {
		errs = append(errs, s.walf.Close())
	}
	if _, err := s.w.ExecContext(context.Background(), `DELETE FROM locks WHERE owner = ?`, s.owner); err != nil {
		errs = append(errs, fmt.Errorf("sqlite: close: release locks: %w", err))
	}
	for _, st := range []*sql.Stmt{s.begin, s.end, s.insSes, s.openSes, s.lockSes, s.updSes} {
		errs = append(errs, st.Close())
	}
	errs = append(errs, s.closeInserts(), s.w.Close())
	s.w = nil
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

var _ session.Store = (*Store)(nil)
