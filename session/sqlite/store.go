package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/reinhq/rein/session"
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
	// when first needed. args is reused by every insert.
	begin, end, updSes *sql.Stmt
	insRows            [maxRows]*sql.Stmt
	args               []any

	mu       sync.Mutex
	closed   bool
	sessions map[session.ID]*state

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
	s := &Store{path: path, sessions: map[session.ID]*state{}, pid: os.Getpid()}
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

	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate",
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, session.ErrClosed
	}
	st := s.sessions[id]
	if st == nil {
		st = &state{}
		s.sessions[id] = st
	}
	return st, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

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

// check opens id for the first time in this Store, in one transaction:
// unless a live process holds the session's lock, it closes an open tail
// turn with session.RepairEvents, and if hold it takes the lock, which
// this Store keeps until Close or Delete. A lock held elsewhere is an
// error only if hold. st.mu must be held.
func (s *Store) check(ctx context.Context, id session.ID, st *state, hold bool) error {
	if st.held || (st.checked && !hold) {
		return nil
	}
	var repaired []session.Event
	err := s.write(ctx, true, false, func(tx *sql.Tx) error {
		repaired = nil
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT `+newestSeq+` FROM sessions WHERE id = ?`, string(id)).Scan(&last); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
			}
			return err
		}
		h, locked, err := s.lockHolder(ctx, tx, id)
		if err != nil {
			return err
		}
		if locked {
			if hold {
				return fmt.Errorf("sqlite: session %q is held by %s; wait for it to finish or stop it: %w", id, h, session.ErrLocked)
			}
			return errSkip
		}
		// A lock row left by another Store means its process died while
		// appending (a clean Close deletes it): close what it left open.
		// Without one, an open turn is one its writer meant to continue.
		if h.Owner != "" && h.Owner != s.owner {
			if repaired, err = s.repair(ctx, tx, id, last); err != nil {
				return err
			}
			if len(repaired) > 0 {
				last = repaired[len(repaired)-1].Seq
				s.log.Warn("sqlite: closed the turn a crashed process left open", "session", id, "holder", h.String(),
					"events", len(repaired), "last_seq", last)
			}
			if !hold {
				if _, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE session = ?`, string(id)); err != nil {
					return err
				}
			}
		}
		if hold {
			if _, err := tx.ExecContext(ctx,
				`INSERT OR REPLACE INTO locks (session, owner, pid, host, started, since) VALUES (?, ?, ?, ?, ?, ?)`,
				string(id), s.owner, s.pid, s.host, s.start, s.now().UnixNano()); err != nil {
				return err
			}
		}
		st.lastSeq = last
		return nil
	})
	if errors.Is(err, errSkip) {
		return nil
	}
	if err != nil {
		if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrLocked) || errors.Is(err, session.ErrClosed) {
			return err
		}
		return fmt.Errorf("sqlite: open session %q: %w", id, err)
	}
	st.checked = true
	st.held = hold
	return nil
}

var errSkip = errors.New("skip")

// lockHolder reads the lock of id and says whether another live Store holds it.
func (s *Store) lockHolder(ctx context.Context, tx *sql.Tx, id session.ID) (holder, bool, error) {
	var (
		h     holder
		since int64
	)
	err := tx.QueryRowContext(ctx, `SELECT owner, pid, host, started, since FROM locks WHERE session = ?`, string(id)).
		Scan(&h.Owner, &h.PID, &h.Host, &h.Started, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, err
	}
	h.Since = time.Unix(0, since)
	if h.Owner == s.owner {
		return h, false, nil
	}
	if h.PID == s.pid && h.Host == s.host {
		return h, true, nil // another Store of this process
	}
	return h, alive(h, s.host), nil
}

// repair closes the turns left open at the end of id's log; last is the
// session's last seq. It returns the events it appended.
func (s *Store) repair(ctx context.Context, tx *sql.Tx, id session.ID, last int64) ([]session.Event, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, type, run, parent_run FROM events
		WHERE session = ? AND type IN ('turn.start', 'turn.end') ORDER BY seq`, string(id))
	if err != nil {
		return nil, err
	}
	open := map[string]int64{} // lane → seq of its open turn.start
	for rows.Next() {
		var (
			seq            int64
			typ, run, prun string
		)
		if err := rows.Scan(&seq, &typ, &run, &prun); err != nil {
			rows.Close()
			return nil, err
		}
		lane := ""
		if prun != "" {
			lane = run
		}
		if typ == session.TypeTurnStart {
			open[lane] = seq
		} else {
			delete(open, lane)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(open) == 0 {
		return nil, nil
	}
	from := last + 1
	for _, seq := range open {
		from = min(from, seq)
	}
	var tail []session.Event
	for ev, err := range s.query(ctx, tx, id, from-1) {
		if err != nil {
			return nil, err
		}
		tail = append(tail, ev)
	}
	fix := session.RepairEvents(tail, s.now())
	if len(fix) == 0 {
		return nil, nil
	}
	for i := range fix {
		fix[i].Session = id
	}
	if err := s.insert(ctx, tx, id, last, fix); err != nil {
		return nil, err
	}
	return fix, nil
}

// insert writes events after last, checking seqs, and updates the
// session row, in tx (whose commit closes the statements it binds).
func (s *Store) insert(ctx context.Context, tx *sql.Tx, id session.ID, last int64, events []session.Event) error {
	if err := session.CheckAppend(id, last, events); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.record(ctx, id, events, true, func(st *sql.Stmt) *sql.Stmt { return tx.StmtContext(ctx, st) })
}

// payloadJSON encodes an event's data as the session JSON shape does.
func payloadJSON(p session.Payload) ([]byte, error) {
	if u, ok := p.(*session.Unknown); ok {
		if len(u.Raw) == 0 {
			return []byte("null"), nil
		}
		if !json.Valid(u.Raw) {
			return nil, fmt.Errorf("raw data of %q event is not valid JSON", u.Type)
		}
		return u.Raw, nil
	}
	return json.Marshal(p)
}

// Append writes events to session id in one transaction. The first event's
// seq must follow the session's last; see session.Store. The first Append
// of a session takes its lock, which this Store holds until Close or Delete.
func (s *Store) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	return s.append(ctx, id, events, false)
}

// append is Append, with the sync of the write-ahead log in the
// background if async.
func (s *Store) append(ctx context.Context, id session.ID, events []session.Event, async bool) error {
	if len(events) == 0 {
		return nil
	}
	sync := s.opts.Durability.Syncs(events)
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.check(ctx, id, st, true); err != nil {
		return err
	}
	if err := s.bg.Err(); err != nil {
		return err
	}
	if err := session.CheckAppend(id, st.lastSeq, events); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	err = s.commit(ctx, sync, async, func() error {
		return s.appendTx(ctx, id, st.lastSeq, events)
	})
	if err != nil {
		if errors.Is(err, session.ErrSeqConflict) || errors.Is(err, session.ErrClosed) {
			return err
		}
		if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
			return fmt.Errorf("sqlite: append to %q: %w", id, session.ErrNotFound)
		}
		return fmt.Errorf("sqlite: append to %q: %w", id, err)
	}
	st.lastSeq = events[len(events)-1].Seq
	s.subs.Notify(id)
	return nil
}

// Events yields the events of session id with seq > afterSeq. The first
// read of a session in this Store closes an open tail turn left by a
// crashed process.
func (s *Store) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		st, err := s.get(id)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		st.mu.Lock()
		err = s.check(ctx, id, st, false)
		st.mu.Unlock()
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		// One read transaction: the session row and its events agree.
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			yield(session.Event{}, fmt.Errorf("sqlite: read session %q: %w", id, err))
			return
		}
		defer tx.Rollback()
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, string(id)).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				err = fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
			}
			yield(session.Event{}, err)
			return
		}
		for ev, err := range s.query(ctx, tx, id, afterSeq) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// Info describes session id.
func (s *Store) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	st, err := s.get(id)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	err = s.check(ctx, id, st, false)
	st.mu.Unlock()
	if err != nil {
		return nil, err
	}
	infos, err := s.list(ctx, `WHERE id = ?`, string(id))
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
	}
	return &infos[0], nil
}

// List describes every session, oldest first.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	return s.list(ctx, ``)
}

func (s *Store) list(ctx context.Context, where string, args ...any) ([]session.Info, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, created, `+newestTime+`, `+newestSeq+`, workdir, parent, meta FROM sessions `+where+` ORDER BY created, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var (
			info             session.Info
			id, parent, meta string
			created, updated int64
		)
		if err := rows.Scan(&id, &created, &updated, &info.LastSeq, &info.WorkDir, &parent, &meta); err != nil {
			return nil, fmt.Errorf("sqlite: list sessions: %w", err)
		}
		info.ID, info.Parent = session.ID(id), session.ID(parent)
		info.Created, info.Updated = time.Unix(0, created), time.Unix(0, updated)
		if meta != "{}" && meta != "" {
			if err := json.Unmarshal([]byte(meta), &info.Meta); err != nil {
				return nil, fmt.Errorf("sqlite: session %q: metadata: %v: %w", id, err, session.ErrCorrupt)
			}
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return out, nil
}

// SetMeta sets a metadata key of session id; an empty value removes it.
func (s *Store) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	err := s.write(ctx, false, false, func(tx *sql.Tx) error {
		var raw string
		if err := tx.QueryRowContext(ctx, `SELECT meta FROM sessions WHERE id = ?`, string(id)).Scan(&raw); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
			}
			return err
		}
		meta := map[string]string{}
		if err := json.Unmarshal([]byte(raw), &meta); err != nil {
			return fmt.Errorf("sqlite: session %q: metadata: %v: %w", id, err, session.ErrCorrupt)
		}
		if value == "" {
			delete(meta, key)
		} else {
			meta[key] = value
		}
		b, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET meta = ? WHERE id = ?`, string(b), string(id))
		return err
	})
	if err != nil && !errors.Is(err, session.ErrNotFound) && !errors.Is(err, session.ErrCorrupt) && !errors.Is(err, session.ErrClosed) {
		return fmt.Errorf("sqlite: set metadata of %q: %w", id, err)
	}
	return err
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
	s.mu.Lock()
	if s.sessions[id] == st {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	st.held, st.checked = false, false
	return nil
}

// Close waits for the background syncs of AppendAsync, returning the
// error of one that failed, releases the Store's locks and closes the
// database. It is idempotent; the Store is unusable afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.subs.Close()
	s.sessions = nil
	s.mu.Unlock()
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
