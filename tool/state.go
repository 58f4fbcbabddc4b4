package tool

import (
	"context"
	"fmt"
	"maps"
	"sync"
)

// StateStore keeps tools' durable key/value state, one map per session
// and tool. Implementations must be safe for concurrent use.
//
// Load returns a copy the caller may keep; a session or tool with no
// state yet has an empty (or nil) map and no error. Commit applies writes
// atomically for that session and tool; a write whose value is "" removes
// the key. Concurrent commits to one map apply whole, last one wins per
// key.
type StateStore interface {
	Load(ctx context.Context, session, tool string) (map[string]string, error)
	Commit(ctx context.Context, session, tool string, writes map[string]string) error
}

// NewMemStateStore returns a StateStore that keeps state in memory, for
// tests and for hosts that need no durability.
func NewMemStateStore() StateStore { return &memStateStore{m: make(map[[2]string]map[string]string)} }

type memStateStore struct {
	mu sync.Mutex
	m  map[[2]string]map[string]string
}

func (s *memStateStore) Load(ctx context.Context, session, tool string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m[[2]string{session, tool}]), nil
}

func (s *memStateStore) Commit(ctx context.Context, session, tool string, writes map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{session, tool}
	cur := s.m[k]
	if cur == nil {
		cur = make(map[string]string)
		s.m[k] = cur
	}
	for key, v := range writes {
		if v == "" {
			delete(cur, key)
		} else {
			cur[key] = v
		}
	}
	return nil
}

// StagedState is the State of one call: reads see the stored state plus
// the call's own writes; writes are staged and reach the store only when
// Commit is called — by Run, when the call succeeds. It is safe for
// concurrent use by the goroutines of one call.
type StagedState struct {
	store         StateStore
	session, tool string

	mu     sync.Mutex
	base   map[string]string
	writes map[string]string
	done   bool
}

// LoadState loads the state of tool in session from store and returns it
// staged for one call.
func LoadState(ctx context.Context, store StateStore, session, tool string) (*StagedState, error) {
	base, err := store.Load(ctx, session, tool)
	if err != nil {
		return nil, fmt.Errorf("tool: load state of %s: %w", tool, err)
	}
	return &StagedState{store: store, session: session, tool: tool, base: base}, nil
}

// Get returns the value of key as the call sees it.
func (s *StagedState) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.writes[key]; ok {
		return v, v != ""
	}
	v, ok := s.base[key]
	return v, ok
}

// Set stages a write; "" stages a removal.
func (s *StagedState) Set(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	if s.writes == nil {
		s.writes = make(map[string]string)
	}
	s.writes[key] = value
}

// Commit sends the staged writes to the store. Writes after Commit or
// Discard are ignored; committing twice does nothing more.
func (s *StagedState) Commit(ctx context.Context) error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	writes := s.writes
	s.mu.Unlock()
	if len(writes) == 0 {
		return nil
	}
	if err := s.store.Commit(ctx, s.session, s.tool, writes); err != nil {
		return fmt.Errorf("tool: commit state of %s: %w", s.tool, err)
	}
	return nil
}

// Discard drops the staged writes.
func (s *StagedState) Discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	s.writes = nil
}
