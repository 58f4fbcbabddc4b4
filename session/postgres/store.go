package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/internal/opened"
	"github.com/reinhq/rein/session/internal/proc"
)

// Durability says when a commit waits for the server to flush it to
// disk. It maps to synchronous_commit: DurabilityStep (the default)
// turns it off for a batch unless the batch ends a step or a turn (holds
// a step.end or turn.end event); DurabilityAlways leaves the server's
// setting for every batch; DurabilityNever turns it off for every batch.
// Off never loses a commit to a crash of rein, nor corrupts anything: a
// crash of the server may lose the last commits before its next flush.
type Durability = session.Durability

// The Durability settings, the same as session's.
const (
	DurabilityStep   = session.DurabilityStep
	DurabilityAlways = session.DurabilityAlways
	DurabilityNever  = session.DurabilityNever
)

// DefaultSchema is the schema of the store's tables when neither
// Options.Schema nor the URL's search_path names one.
const DefaultSchema = "rein"

// DefaultLeaseTTL is how long a lease outlives its last renewal.
const DefaultLeaseTTL = 30 * time.Second

// Options configures a Store. A nil *Options is the zero value.
type Options struct {
	// Schema holds the store's tables; Open creates it if it is missing.
	// Empty is the first schema of the URL's search_path parameter, else
	// DefaultSchema.
	Schema string
	// Durability says when commits wait for the disk; zero is DurabilityStep.
	Durability Durability
	// Logger receives repairs and lost connections; nil discards.
	Logger *slog.Logger
	// Now is the clock for created times and repair events; nil is
	// time.Now. Leases use the server's clock.
	Now func() time.Time
	// LeaseTTL is how long a session's lease lasts without renewal; the
	// Store renews its leases every third of it. Zero is DefaultLeaseTTL.
	LeaseTTL time.Duration
	// KeepOpenTurns leaves the turns a dead lease holder left open as
	// they are, for a durable resume to continue them, instead of
	// closing them with repairs when the lease is taken over (see
	// Crash recovery). Hosts that resume turns (a worker, and whoever
	// follows its sessions) set it.
	KeepOpenTurns bool
	// MaxConns caps the connection pool; zero is pgx's default. The Store
	// keeps one more connection of its own for leases and notifications.
	MaxConns int32
}

// Store keeps sessions in a PostgreSQL schema. It is safe for concurrent
// use, and any number of processes on any number of hosts may share the
// schema; one Store at a time appends to a session (see Lease).
type Store struct {
	opts   Options
	schema string
	where  string // the server, for messages: host:port/database, no secrets
	log    *slog.Logger
	now    func() time.Time
	ttl    time.Duration
	pool   *pgxpool.Pool
	cfg    *pgx.ConnConfig

	owner string // random token naming this Store in the leases table
	host  string
	space string // see proc.Space
	pid   int
	start int64

	ident atomic.Pointer[backend] // the server process of the own connection
	held  atomic.Int64            // leases this Store holds, to skip idle renewals

	sessions opened.Sessions[state]

	subs       session.Broadcaster // wakes Subscribe's channels after appends
	listen     context.Context     // done at the first Subscribe: start listening
	wantListen context.CancelFunc
	listened   chan struct{} // closed once the Store first listens
	listenOnce sync.Once
	stop       context.CancelFunc
	done       chan struct{} // closed when the background goroutine ends
}

// state is what the Store knows of a session it has opened.
type state struct {
	mu      sync.Mutex
	checked bool // checked for a lease left by a dead holder in this Store
	held    bool // this Store holds the session's lease
	lastSeq int64
}

// Open connects to the PostgreSQL server at url (postgres://… or
// postgresql://…, or a key=value connection string), creates the
// schema's tables or brings them up to date, and starts the goroutine
// that renews leases and relays notifications. Tables written by a newer
// rein are refused with an error wrapping session.ErrUnsupported. Close
// releases it all.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	s := &Store{pid: os.Getpid(), listened: make(chan struct{}), done: make(chan struct{})}
	s.listen, s.wantListen = context.WithCancel(context.Background())
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
	s.ttl = s.opts.LeaseTTL
	if s.ttl <= 0 {
		s.ttl = DefaultLeaseTTL
	}
	if s.ttl < 100*time.Millisecond {
		return nil, fmt.Errorf("postgres: open: a lease TTL of %v is too short to renew in time; use at least 100ms", s.ttl)
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, errors.New("postgres: open: the URL does not parse; use postgres://user:password@host:port/database")
	}
	cc := pc.ConnConfig
	s.where = fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	s.schema = s.opts.Schema
	if s.schema == "" {
		s.schema = firstSchema(cc.RuntimeParams["search_path"])
	}
	if s.schema == "" {
		s.schema = DefaultSchema
	}
	cc.RuntimeParams["search_path"] = pgx.Identifier{s.schema}.Sanitize()
	if s.opts.MaxConns > 0 {
		pc.MaxConns = s.opts.MaxConns
	}
	s.cfg = cc.Copy()

	var b [12]byte
	rand.Read(b[:])
	s.owner = hex.EncodeToString(b[:])
	s.host, _ = os.Hostname()
	s.start, _ = proc.Start(s.pid)
	s.space = proc.Space()

	own, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, own, s.schema); err != nil {
		own.Close(context.Background())
		return nil, err
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		own.Close(context.Background())
		return nil, fmt.Errorf("postgres: open %s: %w", s.where, err)
	}
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.background(bg, own)
	return s, nil
}

// firstSchema returns the first schema of a search_path value, unquoted.
func firstSchema(path string) string {
	first, _, _ := strings.Cut(path, ",")
	first = strings.TrimSpace(first)
	if len(first) >= 2 && first[0] == '"' && first[len(first)-1] == '"' {
		return strings.ReplaceAll(first[1:len(first)-1], `""`, `"`)
	}
	if first == "$user" {
		return ""
	}
	return first
}

// Schema returns the schema holding the store's tables.
func (s *Store) Schema() string { return s.schema }

// Pool returns the connection pool, for queries across sessions. Writing
// through it bypasses the Store's checks and leases.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) get(id session.ID) (*state, error) {
	return s.sessions.Get(id, func() *state { return &state{} })
}

func (s *Store) isClosed() bool { return s.sessions.Closed() }

// pgCode returns the SQLSTATE of a server error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
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
		return "", fmt.Errorf("postgres: create %q: %w", id, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, created, updated, workdir, parent, meta) VALUES ($1, $2, $2, $3, $4, $5)`,
		string(id), now.UnixNano(), req.WorkDir, string(req.Parent), string(mb))
	if pgCode(err) == "23505" { // unique_violation
		return "", fmt.Errorf("postgres: create %q: %w", id, session.ErrExists)
	}
	if err != nil {
		return "", s.wrap(fmt.Sprintf("create %q", id), err)
	}
	return id, nil
}

// wrap names what failed, and that the store is closed if it is.
func (s *Store) wrap(what string, err error) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// Info describes session id.
func (s *Store) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	if err := s.checkRead(ctx, id); err != nil {
		return nil, err
	}
	infos, err := s.list(ctx, `WHERE id = $1`, string(id))
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("postgres: session %q: %w", id, session.ErrNotFound)
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
	rows, err := s.pool.Query(ctx, `SELECT id, created, updated, last_seq, workdir, parent, meta FROM sessions `+where+` ORDER BY created, id`, args...)
	if err != nil {
		return nil, s.wrap("list sessions", err)
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var (
			info             session.Info
			id, parent       string
			created, updated int64
		)
		if err := rows.Scan(&id, &created, &updated, &info.LastSeq, &info.WorkDir, &parent, &info.Meta); err != nil {
			return nil, s.wrap("list sessions", err)
		}
		if len(info.Meta) == 0 {
			info.Meta = nil
		}
		info.ID, info.Parent = session.ID(id), session.ID(parent)
		info.Created, info.Updated = time.Unix(0, created), time.Unix(0, updated)
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list sessions", err)
	}
	return out, nil
}

// SetMeta sets a metadata key of session id; an empty value removes it.
func (s *Store) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	var (
		tag pgconn.CommandTag
		err error
	)
	if value == "" {
		tag, err = s.pool.Exec(ctx, `UPDATE sessions SET meta = meta - $2::text WHERE id = $1`, string(id), key)
	} else {
		tag, err = s.pool.Exec(ctx, `UPDATE sessions SET meta = meta || jsonb_build_object($2::text, $3::text) WHERE id = $1`, string(id), key, value)
	}
	if err != nil {
		return s.wrap(fmt.Sprintf("set metadata of %q", id), err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: session %q: %w", id, session.ErrNotFound)
	}
	return nil
}

// Delete removes session id and its events. It fails with an error
// wrapping session.ErrLocked (a *LeaseError) while another live Store
// holds the session's lease.
func (s *Store) Delete(ctx context.Context, id session.ID) error {
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := s.lockSession(ctx, tx, id); err != nil {
			return err
		}
		h, err := s.leaseOf(ctx, tx, id)
		if err != nil {
			return err
		}
		if h != nil && h.Owner != s.owner && s.alive(h) {
			return &LeaseError{Session: id, Holder: *h, Op: "delete"}
		}
		_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, string(id))
		return err
	})
	if err != nil {
		if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrLocked) {
			return err
		}
		return s.wrap(fmt.Sprintf("delete %q", id), err)
	}
	s.sessions.Forget(id, st)
	if st.held {
		s.held.Add(-1)
	}
	st.held, st.checked = false, false
	return nil
}

// Close releases the Store's leases, stops its goroutine and closes its
// connections, after waiting for reads in progress (an Events loop holds
// a connection until it ends). It is idempotent; the Store is unusable
// afterwards.
func (s *Store) Close() error {
	if _, first := s.sessions.Close(); !first {
		return nil
	}
	s.subs.Close()
	s.stop()
	<-s.done
	s.wantListen()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if _, e := s.pool.Exec(ctx, `DELETE FROM leases WHERE owner = $1`, s.owner); e != nil {
		err = fmt.Errorf("postgres: close: release leases (they expire in %v): %w", s.ttl, e)
	}
	s.pool.Close()
	return err
}

var _ session.Store = (*Store)(nil)
