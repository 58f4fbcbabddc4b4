package wirebody

import (
	"slices"
	"sync"

	"github.com/reinhq/rein/llm"
)

// Conversations keeps a model's encoding cache, of type C, for each
// conversation it serves, so that conversations sharing one model (a
// server's sessions, subagents running side by side) each encode only
// their new messages; a single cache would be replaced, and every message
// encoded again, at each turn of the interleaving. A conversation is told
// apart by the Key of its first message. One unused for IdleRequests
// requests (a conversation that ended, or the one a compaction replaced)
// is dropped, and beyond MaxConversations the least recently used is.
// The zero value is ready to use; it is safe for concurrent use.
type Conversations[C any] struct {
	mu    sync.Mutex
	n     uint64 // requests so far
	convs []*Conversation[C]
}

// MaxConversations is how many conversations' caches a Conversations
// keeps at most.
const MaxConversations = 32

// IdleRequests is how many requests of other conversations a
// conversation's cache outlives unused.
const IdleRequests = 512

// Conversation is one conversation's cache, held by whoever locked it
// until Unlock.
type Conversation[C any] struct {
	// Cache is the conversation's cache; only its holder may use it.
	Cache C
	mu    sync.Mutex
	first Key
	used  uint64
}

// Unlock lets the next request of the conversation use its cache.
func (c *Conversation[C]) Unlock() { c.mu.Unlock() }

// Lock returns the conversation req belongs to (nil belongs to the one
// with no messages), a new one if none is kept, locked. Requests of one
// conversation are served one at a time; those of different
// conversations at once.
func (s *Conversations[C]) Lock(req *llm.Request) *Conversation[C] {
	var first Key
	if req != nil && len(req.Messages) > 0 {
		first = KeyOf(&req.Messages[0])
	}
	s.mu.Lock()
	s.n++
	var c *Conversation[C]
	for _, x := range s.convs {
		if x.first == first {
			c = x
			break
		}
	}
	if c == nil {
		c = &Conversation[C]{first: first}
		s.convs = append(s.convs, c)
	}
	c.used = s.n
	s.evict()
	s.mu.Unlock()
	c.mu.Lock()
	return c
}

// evict drops the conversations idle too long, then the least recently
// used beyond the most kept. A conversation dropped while a request uses
// it is finished with by that request.
func (s *Conversations[C]) evict() {
	kept := s.convs[:0]
	for _, c := range s.convs {
		if s.n-c.used <= IdleRequests {
			kept = append(kept, c)
		}
	}
	clear(s.convs[len(kept):])
	s.convs = kept
	for len(s.convs) > MaxConversations {
		oldest := 0
		for i, c := range s.convs {
			if c.used < s.convs[oldest].used {
				oldest = i
			}
		}
		s.convs = slices.Delete(s.convs, oldest, oldest+1)
	}
}
