package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reinhq/rein/session"
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

	mu       sync.Mutex
	closed   bool
	sessions map[session.ID]*state

	subs session.Broadcaster // wakes Subscribe's channels after appends
}

// state is what the Store knows of one session it has opened.
type state struct {
	id session.ID
	mu sync.Mutex // serializes opening, appends and metadata updates

	checked bool     // the file was scanned and repaired under the lock
	lock    *os.File // held from the first Append until Close or Delete
	f       *os.File // the data file, open for appending while lock is held
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
	s := &Store{dir: dir, sessions: map[session.ID]*state{}}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, session.ErrClosed
	}
	st := s.sessions[id]
	if st == nil {
		st = &state{id: id}
		st.sync.Gap = syncq.DefaultGap
		s.sessions[id] = st
	}
	return st, nil
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
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
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

// check opens st for the first time in this Store: under the session's
// lock it cuts an uncommitted tail and closes an open tail turn with
// session.RepairEvents. If hold, the lock is kept for appending;
// otherwise it is released, and a lock held elsewhere (a live appender,
// whose tail is not a crash) just skips the check. st.mu must be held.
func (s *Store) check(ctx context.Context, st *state, hold bool) error {
	if st.lock != nil || (st.checked && !hold) || s.opts.ReadOnly {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	path := s.Path(st.id)
	if _, err := os.Stat(path); err != nil {
		return notFound(st.id, err)
	}
	lock, stale, err := s.takeLock(ctx, st.id, hold)
	if err != nil {
		if !hold && errors.Is(err, session.ErrLocked) {
			return nil
		}
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		unlockFile(lock)
		return notFound(st.id, err)
	}
	if err := s.prepare(st, f, stale); err != nil {
		f.Close()
		unlockFile(lock)
		return err
	}
	st.checked = true
	if !hold {
		f.Close()
		return unlockFile(lock)
	}
	st.lock, st.f = lock, f
	st.held.Store(true)
	return nil
}

// takeLock takes the append lock of id. A lock held only briefly (by
// another Store checking the session) is waited for, up to half a second.
// A held lock records this process as its holder.
func (s *Store) takeLock(ctx context.Context, id session.ID, hold bool) (*os.File, *holder, error) {
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		lock, stale, err := lockFile(s.lockPath(id), id, s.now(), hold)
		if err == nil || !errors.Is(err, session.ErrLocked) || !hold || time.Now().After(deadline) {
			return lock, stale, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// prepare scans the file and truncates an uncommitted tail. If stale
// names a process that died while appending, it also closes the turns
// that process left open. The caller holds the session's lock.
func (s *Store) prepare(st *state, f *os.File, stale *holder) error {
	name := f.Name()
	sc, err := scanFile(f, name)
	if err != nil {
		return err
	}
	if sc.torn {
		fi, _ := f.Stat()
		var dropped int64
		if fi != nil {
			dropped = fi.Size() - sc.end
		}
		if err := f.Truncate(sc.end); err != nil {
			return fmt.Errorf("jsonl: %s: cut uncommitted tail: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("jsonl: %s: cut uncommitted tail: %w", name, err)
		}
		s.log.Warn("jsonl: dropped an uncommitted tail", "session", st.id, "file", name, "bytes", dropped, "last_seq", sc.lastSeq)
	}
	st.hdr = sc.hdr
	st.lastSeq = sc.lastSeq
	st.size.Store(sc.end)

	// Decode the tail turn (everything after the last turn.end) to see
	// whether it is open.
	var tail []session.Event
	lr := newLineReader(io.NewSectionReader(f, sc.tailOff, sc.end-sc.tailOff), sc.tailOff, sc.tailLine-1)
	var dec lineDecoder
	for {
		line, complete, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		if !complete {
			break
		}
		if tail, err = dec.decodeLine(tail, line); err != nil {
			return fmt.Errorf("jsonl: %s line %d: %v: %w", name, lr.line, err, session.ErrCorrupt)
		}
	}
	st.updated = sc.hdr.Created
	if len(tail) > 0 {
		st.updated = tail[len(tail)-1].Time
	} else if sc.lastSeq > 0 {
		if _, t, ok := s.lastEvent(f, sc.end); ok {
			st.updated = t
		}
	}
	if stale == nil {
		// The last appender closed its Store cleanly: an open turn is one
		// it meant to continue, not a crash.
		return nil
	}
	fix := repairTail(tail, s.now())
	if len(fix) == 0 {
		return nil
	}
	for i := range fix {
		if fix[i].Session == "" {
			fix[i].Session = st.id
		}
	}
	if fix[0].Seq != st.lastSeq+1 {
		return fmt.Errorf("jsonl: %s: repair starts at seq %d, want %d", name, fix[0].Seq, st.lastSeq+1)
	}
	if err := s.write(st, f, fix, true, false); err != nil {
		return fmt.Errorf("jsonl: %s: close the open tail turn: %w", name, err)
	}
	s.log.Warn("jsonl: closed the turn a crashed process left open", "session", st.id, "file", name,
		"holder", stale.String(), "events", len(fix), "last_seq", st.lastSeq)
	return nil
}

// write appends events as one write, truncating a partial write away,
// and syncs them if forceSync or the durability setting says so: before
// it returns, or in the background if async. st.mu is held and st.size
// is the file's committed size.
func (s *Store) write(st *state, f *os.File, events []session.Event, forceSync, async bool) error {
	buf, err := encodeBatch(st.buf[:0], st.id, events)
	st.buf = buf[:0]
	if err != nil {
		return err
	}
	prev := st.size.Load()
	if _, err := f.Write(buf); err != nil {
		if terr := f.Truncate(prev); terr != nil {
			return fmt.Errorf("jsonl: append: %w (and cutting the partial write failed: %v; reopen the store to repair the file)", err, terr)
		}
		return fmt.Errorf("jsonl: append: %w", err)
	}
	size := prev + int64(len(buf))
	if sync := forceSync || s.needSync(events); sync && async {
		st.sync.Request(size, syncFile(f))
	} else if sync {
		if err := f.Sync(); err != nil {
			// The bytes may or may not be on disk; take them back so the
			// caller's retry does not duplicate them. Batches of
			// AppendAsync still waiting for a sync may be lost too.
			f.Truncate(prev)
			st.sync.Fail(syncFailed(f, err))
			return fmt.Errorf("jsonl: append: sync: %w", err)
		}
		st.sync.Synced(size)
	}
	last := &events[len(events)-1]
	st.lastSeq = last.Seq
	st.updated = last.Time
	st.size.Store(size)
	s.subs.Notify(st.id)
	if cap(st.buf) > 1<<20 {
		st.buf = nil // do not pin one huge batch's buffer
	}
	return nil
}

func (s *Store) needSync(events []session.Event) bool {
	return s.opts.Durability.Syncs(events)
}

// Append writes events to session id as one write. The first event's seq
// must follow the session's last; see session.Store. The first Append of
// a session takes its lock, which this Store holds until Close or Delete.
func (s *Store) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	return s.append(ctx, id, events, false)
}

// append is Append, with the sync in the background if async.
func (s *Store) append(ctx context.Context, id session.ID, events []session.Event, async bool) error {
	if err := s.writable("append"); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	if err := validID(id); err != nil {
		return err
	}
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.check(ctx, st, true); err != nil {
		return err
	}
	if st.f == nil { // Closed or deleted meanwhile.
		return session.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := st.sync.Err(); err != nil {
		return fmt.Errorf("jsonl: session %q: %w", id, err)
	}
	if err := session.CheckAppend(id, st.lastSeq, events); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	if err := s.write(st, st.f, events, false, async); err != nil {
		return fmt.Errorf("jsonl: session %q: %w", id, err)
	}
	return nil
}

// Events yields the events of session id with seq > afterSeq. It reads
// the committed events: a torn or uncommitted tail is not yielded, and a
// corrupt line before a committed turn.end ends the stream with an error
// wrapping session.ErrCorrupt that names the line.
func (s *Store) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		if err := validID(id); err != nil {
			yield(session.Event{}, fmt.Errorf("%w: %w", err, session.ErrNotFound))
			return
		}
		st, err := s.get(id)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		st.mu.Lock()
		err = s.check(ctx, st, false)
		st.mu.Unlock()
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		f, err := os.Open(s.Path(id))
		if err != nil {
			yield(session.Event{}, notFound(id, err))
			return
		}
		defer f.Close()
		limit := int64(-1)
		if st.held.Load() {
			limit = st.size.Load()
		}
		from := st.cur.Load()
		if from == nil || from.seq > afterSeq {
			from = st.marks.find(afterSeq)
		}
		cur, err := readEvents(ctx, f, limit, afterSeq, from, st.marks.add, yield)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		if cur != nil {
			if old := st.cur.Load(); old == nil || old.off < cur.off {
				st.cur.CompareAndSwap(old, cur)
			}
		}
	}
}

// cursor is a place in a session file where a reader can start: just
// after the line holding seq, line number line, at byte off, in the file
// dev/ino. Lines before a cursor were read whole and in order, and are
// never cut (only an uncommitted tail is), so a later read that wants
// only newer events can start there: reading what is new costs what is
// new, not the whole log.
type cursor struct {
	seq      int64
	off      int64
	line     int
	dev, ino uint64
}

func fileID(f *os.File) (dev, ino uint64, ok bool) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, false
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(sys.Dev), sys.Ino, true
}

// readEvents yields the committed events of f with seq > afterSeq,
// reading up to byte limit (all if negative). It starts at from if that
// is a cursor of f at or before afterSeq. It returns an error to yield,
// or nil when done or stopped, and the cursor at the end of what it read
// (nil if it did not reach the end).
//
// Every markEvery bytes it passes mark a cursor, if mark is not nil.
func readEvents(ctx context.Context, f *os.File, limit, afterSeq int64, from *cursor, mark func(cursor), yield func(session.Event, error) bool) (*cursor, error) {
	name := f.Name()
	dev, ino, idOK := fileID(f)
	start := cursor{dev: dev, ino: ino}
	if from != nil && idOK && from.dev == dev && from.ino == ino && from.seq <= afterSeq && (limit < 0 || from.off <= limit) {
		start = *from
	}
	end := int64(1<<63 - 1)
	if limit >= 0 {
		end = limit
	}
	lr := newLineReader(io.NewSectionReader(f, start.off, end-start.off), start.off, start.line)
	var dec lineDecoder
	if start.off == 0 {
		line, complete, err := lr.next()
		if err == io.EOF || (err == nil && !complete) {
			return nil, fmt.Errorf("jsonl: %s line 1: missing header: %w", name, session.ErrCorrupt)
		}
		if err != nil {
			return nil, fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		if _, err := decodeHeader(line, name); err != nil {
			return nil, err
		}
	}
	var (
		evs      []session.Event
		last     = start.seq
		lastMark = start.off
	)
	for n := 0; ; n++ {
		if n&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if mark != nil && idOK && lr.off-lastMark >= markEvery {
			mark(cursor{seq: last, off: lr.off, line: lr.line, dev: dev, ino: ino})
			lastMark = lr.off
		}
		line, complete, err := lr.next()
		if err == io.EOF || (err == nil && !complete) {
			if !idOK {
				return nil, nil
			}
			off := lr.off
			if !complete && err == nil {
				off -= int64(len(line))
			}
			return &cursor{seq: last, off: off, line: lr.line - b2i(!complete && err == nil), dev: dev, ino: ino}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		lineNo := lr.line
		// Lines wholly before afterSeq are checked, not decoded.
		if seq, count, ok := fastHead(line); ok && seq == last+1 && seq+int64(count)-1 <= afterSeq && validJSON(line) {
			last = seq + int64(count) - 1
			continue
		}
		evs, err = dec.decodeLine(evs[:0], line)
		isTurnEnd := false
		if err == nil {
			isTurnEnd = evs[len(evs)-1].Data.EventType() == session.TypeTurnEnd
			if evs[0].Seq != last+1 {
				err = fmt.Errorf("seq %d after seq %d", evs[0].Seq, last)
			}
		}
		if err != nil {
			return nil, corruptIfCommittedAfter(lr, name, lineNo, err, isTurnEnd)
		}
		last = evs[len(evs)-1].Seq
		for i := range evs {
			if evs[i].Seq <= afterSeq {
				continue
			}
			if !yield(evs[i], nil) {
				return nil, nil
			}
		}
	}
}

// markEvery is the distance between the places a reader remembers in a
// session file, so that reading the end of a long log skips the rest.
const markEvery = 16 << 10

// marks are cursors into one session file, in order.
type marks struct {
	mu   sync.Mutex
	list []cursor
}

// add remembers c if it lies past every cursor already known.
func (m *marks) add(c cursor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.list); n > 0 {
		if last := m.list[n-1]; last.dev != c.dev || last.ino != c.ino {
			m.list = m.list[:0] // the file was replaced
		} else if c.off <= last.off {
			return
		}
	}
	m.list = append(m.list, c)
}

// find returns the last cursor at or before afterSeq, or nil.
func (m *marks) find(afterSeq int64) *cursor {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.list), func(i int) bool { return m.list[i].seq > afterSeq })
	if i == 0 {
		return nil
	}
	c := m.list[i-1]
	return &c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fastHead reads the first seq and the event count of a line from its
// first bytes, as this package writes them: {"seq":N, or {"pack":C,"seq":N,.
func fastHead(line []byte) (seq int64, count int, ok bool) {
	count = 1
	rest, isPack := bytes.CutPrefix(line, packPrefix)
	if isPack {
		c, r, ok := leadingInt(rest)
		if !ok || c < 1 {
			return 0, 0, false
		}
		count = int(c)
		if rest, ok = bytes.CutPrefix(r, []byte(`,"seq":`)); !ok {
			return 0, 0, false
		}
	} else if rest, ok = bytes.CutPrefix(line, []byte(`{"seq":`)); !ok {
		return 0, 0, false
	}
	seq, r, ok := leadingInt(rest)
	if !ok || len(r) == 0 || r[0] != ',' {
		return 0, 0, false
	}
	return seq, count, true
}

func leadingInt(b []byte) (int64, []byte, bool) {
	var n int64
	i := 0
	for ; i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	return n, b[i:], i > 0
}

// lastEvent reads the seq and time of the last committed event before
// offset end, reading only the end of the file.
func (s *Store) lastEvent(f *os.File, end int64) (int64, time.Time, bool) {
	for window := int64(64 << 10); ; window *= 4 {
		from := max(end-window, 0)
		b := make([]byte, end-from)
		if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
			return 0, time.Time{}, false
		}
		// Lines are complete only after the first newline of the window,
		// unless the window starts the file (whose first line is the header).
		for hi := len(b); hi > 0; {
			if b[hi-1] != '\n' {
				// An incomplete last line: skip back to the previous newline.
				i := bytes.LastIndexByte(b[:hi], '\n')
				if i < 0 {
					break
				}
				hi = i + 1
				continue
			}
			lo := bytes.LastIndexByte(b[:hi-1], '\n') + 1
			if lo == 0 && from > 0 {
				break // the line may start before the window
			}
			if lo == 0 && from == 0 {
				return 0, time.Time{}, false // only the header is left
			}
			var p struct {
				Pack int       `json:"pack"`
				Seq  int64     `json:"seq"`
				Time time.Time `json:"time"`
				DT   []int64   `json:"dt"`
			}
			if json.Unmarshal(b[lo:hi-1], &p) == nil && p.Seq > 0 {
				if p.Pack > 0 && len(p.DT) == p.Pack {
					return p.Seq + int64(p.Pack) - 1, p.Time.Add(time.Duration(p.DT[p.Pack-1])), true
				}
				return p.Seq, p.Time, true
			}
			hi = lo
		}
		if from == 0 {
			return 0, time.Time{}, false
		}
	}
}

type sidecar struct {
	Meta map[string]string `json:"meta"`
}

// Info describes session id from its header, its metadata file and the
// end of its log; it does not read the whole log.
func (s *Store) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", err, session.ErrNotFound)
	}
	st, err := s.get(id)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.check(ctx, st, false); err != nil {
		return nil, err
	}
	return s.info(id, st)
}

// info builds the Info of id. st may be nil; if it holds the session's
// lock its in-memory state is used.
func (s *Store) info(id session.ID, st *state) (*session.Info, error) {
	var (
		hdr     *header
		lastSeq int64
		updated time.Time
	)
	if st != nil && st.lock != nil {
		hdr, lastSeq, updated = st.hdr, st.lastSeq, st.updated
	} else {
		f, err := os.Open(s.Path(id))
		if err != nil {
			return nil, notFound(id, err)
		}
		defer f.Close()
		lr := newLineReader(f, 0, 0)
		line, complete, err := lr.next()
		if err != nil || !complete {
			return nil, fmt.Errorf("jsonl: %s line 1: missing header: %w", f.Name(), session.ErrCorrupt)
		}
		if hdr, err = decodeHeader(line, f.Name()); err != nil {
			return nil, err
		}
		updated = hdr.Created
		if fi, err := f.Stat(); err == nil {
			if seq, t, ok := s.lastEvent(f, fi.Size()); ok {
				lastSeq, updated = seq, t
			}
		}
	}
	info := &session.Info{ID: id, Created: hdr.Created, Updated: updated, LastSeq: lastSeq, WorkDir: hdr.WorkDir, Parent: hdr.Parent}
	meta, err := s.readMeta(id, hdr)
	if err != nil {
		return nil, err
	}
	info.Meta = meta
	return info, nil
}

// readMeta returns the session's metadata: the sidecar file if there is
// one, else the header's.
func (s *Store) readMeta(id session.ID, hdr *header) (map[string]string, error) {
	b, err := os.ReadFile(s.metaPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		if len(hdr.Meta) == 0 {
			return nil, nil
		}
		m := make(map[string]string, len(hdr.Meta))
		for k, v := range hdr.Meta {
			m[k] = v
		}
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: read metadata of %q: %w", id, err)
	}
	var sc sidecar
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("jsonl: %s: %v: %w", s.metaPath(id), err, session.ErrCorrupt)
	}
	if len(sc.Meta) == 0 {
		return nil, nil
	}
	return sc.Meta, nil
}

// List describes every session in the directory, oldest first. It reads
// each file's header and end, not its whole log.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, session.ErrClosed
	}
	s.mu.Unlock()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("jsonl: list %s: %w", s.dir, err)
	}
	var out []session.Info
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := session.ID(strings.TrimSuffix(name, ".jsonl"))
		if validID(id) != nil {
			continue
		}
		s.mu.Lock()
		st := s.sessions[id]
		s.mu.Unlock()
		var info *session.Info
		if st != nil {
			st.mu.Lock()
			info, err = s.info(id, st)
			st.mu.Unlock()
		} else {
			info, err = s.info(id, nil)
		}
		if errors.Is(err, session.ErrNotFound) {
			continue // deleted while listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// SetMeta sets a metadata key of session id; an empty value removes it.
// Metadata lives in a sidecar file, <id>.meta.json, replaced atomically,
// so it never takes a seq from the log.
func (s *Store) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	if err := s.writable("set metadata"); err != nil {
		return err
	}
	if err := validID(id); err != nil {
		return fmt.Errorf("%w: %w", err, session.ErrNotFound)
	}
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(s.Path(id))
	if err != nil {
		return notFound(id, err)
	}
	defer f.Close()
	// The data file's own flock serializes metadata updates across
	// processes; the append lock is another file, so an appender does not
	// block them.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	lr := newLineReader(f, 0, 0)
	line, complete, err := lr.next()
	if err != nil || !complete {
		return fmt.Errorf("jsonl: %s line 1: missing header: %w", f.Name(), session.ErrCorrupt)
	}
	hdr, err := decodeHeader(line, f.Name())
	if err != nil {
		return err
	}
	meta, err := s.readMeta(id, hdr)
	if err != nil {
		return err
	}
	if meta == nil {
		meta = map[string]string{}
	}
	if value == "" {
		delete(meta, key)
	} else {
		meta[key] = value
	}
	b, err := json.Marshal(sidecar{Meta: meta})
	if err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	if err := s.replaceFile(s.metaPath(id), append(b, '\n')); err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	return nil
}

// replaceFile writes path atomically: a temporary file renamed over it.
func (s *Store) replaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(s.dir, ".meta-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil && s.opts.Durability != DurabilityNever {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if s.opts.Durability != DurabilityNever {
		return syncDir(s.dir)
	}
	return nil
}

// Delete removes session id's files. It fails with session.ErrLocked if
// another process or Store is appending to it.
func (s *Store) Delete(ctx context.Context, id session.ID) error {
	if err := s.writable("delete"); err != nil {
		return err
	}
	if err := validID(id); err != nil {
		return fmt.Errorf("%w: %w", err, session.ErrNotFound)
	}
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := os.Stat(s.Path(id)); err != nil {
		return notFound(id, err)
	}
	lock := st.lock
	if lock == nil {
		if lock, _, err = s.takeLock(ctx, id, true); err != nil {
			return err
		}
	}
	st.sync.Drain() // the file goes: a failed sync of it no longer matters
	err = os.Remove(s.Path(id))
	os.Remove(s.metaPath(id))
	os.Remove(s.lockPath(id))
	if st.f != nil {
		st.f.Close()
	}
	unlockFile(lock)
	st.lock, st.f, st.checked = nil, nil, false
	st.held.Store(false)
	s.mu.Lock()
	if s.sessions[id] == st {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
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
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.subs.Close()
	states := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	var errs []error
	for _, st := range states {
		st.mu.Lock()
		if err := st.sync.Drain(); err != nil {
			errs = append(errs, fmt.Errorf("jsonl: session %q: %w", st.id, err))
		}
		if st.f != nil {
			errs = append(errs, st.f.Close())
		}
		errs = append(errs, unlockFile(st.lock))
		st.lock, st.f = nil, nil
		st.held.Store(false)
		st.mu.Unlock()
	}
	return errors.Join(errs...)
}

var _ session.Store = (*Store)(nil)
