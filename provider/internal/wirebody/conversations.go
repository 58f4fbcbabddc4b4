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
// is dropped, and beyond MaxConversations the least recently used is. So
// is, beyond OneShots, a conversation that has made one request: a caller
// that builds its messages anew for every request makes a new
// conversation each time, and keeping those would only hold memory. One
// dropped so that comes back is remembered, and kept from then on like
// any other, so that many conversations starting at once are not dropped
// again and again.
// The zero value is ready to use; it is safe for concurrent use.
type Conversations[C any] struct {
	mu      sync.Mutex
	n       uint64 // requests so far
	convs   []*Conversation[C]
	dropped []Key // the first messages of the latest one-shots dropped
}

// MaxConversations is how many conversations' caches a Conversations
// keeps at most.
const MaxConversations = 32

// IdleRequests is how many requests of other conversations a
// conversation's cache outlives unused.
const IdleRequests = 512

// OneShots is how many conversations that have made a single request a
// Conversations keeps at most.
const OneShots = 4

// Conversation is one conversation's cache, held by whoever locked it
// until Unlock.
type Conversation[C any] struct {
	// Cache is the conversation's cache; only its holder may use it.
	Cache C
	mu    sync.Mutex
	first Key
	used  uint64 // the request that used it last
	uses  int    // requests it has made
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
		if i := slices.Index(s.dropped, first); i >= 0 {
			c.uses = 1 // the request it was dropped after
			s.dropped = slices.Delete(s.dropped, i, i+1)
		}
		s.convs = append(s.convs, c)
	}
	c.used = s.n
	c.uses++
	s.evict()
	s.mu.Unlock()
	c.mu.Lock()
	return c
}

// evict drops the conversations idle too long, then the least recently
// used of those that made one request beyond OneShots, then the least
// recently used beyond MaxConversations. A conversation dropped while a
// request uses it is finished with by that request.
func (s *Conversations[C]) evict() {
	kept, once := s.convs[:0], 0
	for _, c := range s.convs {
		if s.n-c.used <= IdleRequests {
			kept = append(kept, c)
			if c.uses == 1 {
				once++
			}
		}
	}
	clear(s.convs[len(kept):])
	s.convs = kept
	for ; once > OneShots; once-- {
		c := s.dropOldest(func(c *Conversation[C]) bool { return c.uses == 1 })
		if len(s.dropped) == MaxConversations {
			s.dropped = slices.Delete(s.dropped, 0, 1)
		}
		s.dropped = append(s.dropped, c.first)
	}
	for len(s.convs) > MaxConversations {
		s.dropOldest(func(*Conversation[C]) bool { return true })
	}
}

// dropOldest drops and returns the least recently used conversation of
// those that match.
func (s *Conversations[C]) dropOldest(match func(*Conversation[C]) bool) *Conversation[C] {
	oldest := -1
	for i, c := range s.convs {
		if match(c) && (oldest < 0 || c.used < s.convs[oldest].used) {
			oldest = i
		}
	}
	c := s.convs[oldest]
	s.convs = slices.Delete(s.convs, oldest, oldest+1)
	return c
}
