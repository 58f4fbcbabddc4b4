package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Notifier is an optional interface of a Store that can tell when events
// are appended, so Follow need not poll.
type Notifier interface {
	// Subscribe returns a channel that receives a value soon after each
	// successful Append to session id (signals may be coalesced), and a
	// function that ends the subscription. The channel is never closed.
	Subscribe(id ID) (<-chan struct{}, func())
}

// NewID returns a new random session id. Ids sort by creation time: twelve
// hex digits of Unix milliseconds, a dash, sixteen random hex digits.
func NewID() ID {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	ms := strconv.FormatInt(time.Now().UnixMilli(), 16)
	for len(ms) < 12 {
		ms = "0" + ms
	}
	return ID(ms + "-" + hex.EncodeToString(b[:]))
}

// CheckID returns an error if id cannot name a session: it must be 1 to
// 128 characters of ASCII letters, digits, '.', '_' or '-', and must not
// start with '.'. Stores check it so an id is always safe as a file name.
func CheckID(id ID) error {
	if len(id) == 0 || len(id) > 128 || id[0] == '.' {
		return fmt.Errorf("session: invalid id %q: use 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("session: invalid id %q: use 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'", id)
		}
	}
	return nil
}

// CheckAppend validates a batch for Append to a session whose last seq is
// last: every event has a payload, names session id (or no session) and
// seqs run last+1, last+2, …. A seq mismatch wraps ErrSeqConflict.
func CheckAppend(id ID, last int64, events []Event) error {
	for i := range events {
		e := &events[i]
		if want := last + 1 + int64(i); e.Seq != want {
			return fmt.Errorf("%w: session %s: event %d of the batch has seq %d, want %d; read the log again and renumber", ErrSeqConflict, id, i, e.Seq, want)
		}
		if e.Data == nil {
			return fmt.Errorf("session: append to %s: event seq %d has no payload", id, e.Seq)
		}
		if e.Session != "" && e.Session != id {
			return fmt.Errorf("session: append to %s: event seq %d names session %s", id, e.Seq, e.Session)
		}
	}
	return nil
}

// MemStore is a Store that keeps sessions in memory. It is the store for
// tests, examples and short-lived agents; it keeps deep copies, so callers
// cannot change stored events through the values they passed or received.
// It implements Notifier.
type MemStore struct {
	mu       sync.RWMutex
	closed   bool
	sessions map[ID]*memSession
}

type memSession struct {
	info Info
	// batches are the appended events in seq order, in the slices they
	// came in; a batch handed over right after the last one in the same
	// array extends it. Only the last batch's header ever changes and
	// the list is only appended to, so a reader that copies the last
	// header under the lock may keep the rest after it is released.
	batches [][]Event
	subs    map[*memSub]struct{}
}

type memSub struct{ ch chan struct{} }

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{sessions: map[ID]*memSession{}}
}

var _ Store = (*MemStore)(nil)
var _ Notifier = (*MemStore)(nil)

// lookup returns session id; the caller holds mu.
func (s *MemStore) lookup(id ID) (*memSession, error) {
	if s.closed {
		return nil, ErrClosed
	}
	ss := s.sessions[id]
	if ss == nil {
		return nil, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return ss, nil
}

// Create makes a new, empty session.
func (s *MemStore) Create(ctx context.Context, req *CreateRequest) (ID, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if req == nil {
		req = &CreateRequest{}
	}
	id := req.ID
	if id == "" {
		id = NewID()
	} else if err := CheckID(id); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if s.sessions[id] != nil {
		return "", fmt.Errorf("%w: session %s; choose another id or leave it empty", ErrExists, id)
	}
	now := time.Now()
	s.sessions[id] = &memSession{info: Info{
		ID:      id,
		Created: now,
		Updated: now,
		WorkDir: req.WorkDir,
		Parent:  req.Parent,
		Meta:    maps.Clone(req.Meta),
	}}
	return id, nil
}

// Append adds events to session id. Their seqs must continue the log
// (ErrSeqConflict otherwise, and nothing is written); an event with an
// empty Session is stored with id.
func (s *MemStore) Append(ctx context.Context, id ID, events ...Event) error {
	return s.append(ctx, id, events, true)
}

// AppendOwned is Append without the copy: the store keeps the events it
// is given, in the slice it is given, which the caller must not modify
// (nor reuse) afterwards.
func (s *MemStore) AppendOwned(ctx context.Context, id ID, events ...Event) error {
	return s.append(ctx, id, events, false)
}

func (s *MemStore) append(ctx context.Context, id ID, events []Event, clone bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.lookup(id)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	if err := CheckAppend(id, ss.info.LastSeq, events); err != nil {
		return err
	}
	if clone {
		kept := make([]Event, len(events))
		for i := range events {
			kept[i] = events[i].Clone()
		}
		events = kept
	}
	for i := range events {
		events[i].Session = id
	}
	ss.add(events)
	last := &events[len(events)-1]
	ss.info.LastSeq = last.Seq
	ss.info.Updated = last.Time
	for sub := range ss.subs {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// add stores a checked batch.
func (ss *memSession) add(events []Event) {
	if n := len(ss.batches); n > 0 {
		last := ss.batches[n-1]
		if k := len(last); k < cap(last) && &last[:k+1][k] == &events[0] {
			ss.batches[n-1] = last[:k+len(events)]
			return
		}
	}
	ss.batches = push(ss.batches, events)
}

// Events yields deep copies of the events of id with seq > afterSeq. It
// sees the events appended before it started; appends during the
// iteration are not waited for.
func (s *MemStore) Events(ctx context.Context, id ID, afterSeq int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		s.mu.RLock()
		ss, err := s.lookup(id)
		var tail []Event
		var batches [][]Event
		if err == nil && len(ss.batches) > 0 {
			// Appended-to only, and only the last batch's header
			// changes: that one is copied, the rest kept as they are.
			n := len(ss.batches)
			batches, tail = ss.batches[:n-1], ss.batches[n-1]
		}
		s.mu.RUnlock()
		if err != nil {
			yield(Event{}, err)
			return
		}
		// The first batch holding an event after afterSeq: seqs run
		// 1, 2, … without gaps across the batches.
		b := sort.Search(len(batches), func(i int) bool {
			last := batches[i]
			return last[len(last)-1].Seq > afterSeq
		})
		for _, batch := range batches[b:] {
			if !yieldAfter(ctx, batch, afterSeq, yield) {
				return
			}
		}
		yieldAfter(ctx, tail, afterSeq, yield)
	}
}

// yieldAfter yields deep copies of the events of batch with seq >
// afterSeq; false when the iteration should stop.
func yieldAfter(ctx context.Context, batch []Event, afterSeq int64, yield func(Event, error) bool) bool {
	if len(batch) == 0 {
		return true
	}
	from := min(max(afterSeq-batch[0].Seq+1, 0), int64(len(batch)))
	for i := range batch[from:] {
		if err := ctx.Err(); err != nil {
			yield(Event{}, err)
			return false
		}
		if !yield(batch[from+int64(i)].Clone(), nil) {
			return false
		}
	}
	return true
}

// Info describes session id.
func (s *MemStore) Info(ctx context.Context, id ID) (*Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ss, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	info := ss.info
	info.Meta = maps.Clone(info.Meta)
	return &info, nil
}

// List describes every session, most recently updated first.
func (s *MemStore) List(ctx context.Context) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	out := make([]Info, 0, len(s.sessions))
	for _, ss := range s.sessions {
		info := ss.info
		info.Meta = maps.Clone(info.Meta)
		out = append(out, info)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Info) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out, nil
}

// SetMeta sets a metadata key of session id; an empty value deletes it.
func (s *MemStore) SetMeta(ctx context.Context, id ID, key, value string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return errors.New("session: set meta: empty key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.lookup(id)
	if err != nil {
		return err
	}
	if value == "" {
		delete(ss.info.Meta, key)
		return nil
	}
	if ss.info.Meta == nil {
		ss.info.Meta = map[string]string{}
	}
	ss.info.Meta[key] = value
	return nil
}

// Delete removes session id and its events.
func (s *MemStore) Delete(ctx context.Context, id ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.lookup(id)
	if err != nil {
		return err
	}
	// Wake followers so they see the session is gone.
	for sub := range ss.subs {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
	}
	delete(s.sessions, id)
	return nil
}

// Subscribe implements Notifier. Subscribing to a session that does not
// exist yet, or after Close, returns a channel that never fires.
func (s *MemStore) Subscribe(id ID) (<-chan struct{}, func()) {
	sub := &memSub{ch: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if s.closed || ss == nil {
		return sub.ch, func() {}
	}
	if ss.subs == nil {
		ss.subs = map[*memSub]struct{}{}
	}
	ss.subs[sub] = struct{}{}
	return sub.ch, func() {
		s.mu.Lock()
		delete(ss.subs, sub)
		s.mu.Unlock()
	}
}

// Close releases the store; later calls return ErrClosed. The sessions
// are dropped. Close is idempotent.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, ss := range s.sessions {
		for sub := range ss.subs {
			select {
			case sub.ch <- struct{}{}:
			default:
			}
		}
	}
	s.sessions = nil
	return nil
}
