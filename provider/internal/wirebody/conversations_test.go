package wirebody

import (
	"testing"

	"github.com/reinhq/rein/llm"
)

// convo is a request of a conversation of n user messages.
func convo(n int) *llm.Request {
	req := &llm.Request{Messages: make([]llm.Message, n)}
	for i := range req.Messages {
		req.Messages[i] = llm.UserText("message")
	}
	return req
}

// Two conversations taking turns keep a cache each: what one stored is
// there at its next request, whatever the other did in between.
func TestConversationsKeepACacheEach(t *testing.T) {
	var s Conversations[[]string]
	a, b := convo(2), convo(3)
	for turn := range 3 {
		for _, c := range []struct {
			name string
			req  *llm.Request
		}{{"a", a}, {"b", b}} {
			conv := s.Lock(c.req)
			if len(conv.Cache) != turn {
				t.Fatalf("turn %d of %s: the cache holds %v", turn, c.name, conv.Cache)
			}
			conv.Cache = append(conv.Cache, c.name)
			conv.Unlock()
		}
		a.Messages = append(a.Messages, llm.UserText("more"))
		b.Messages = append(b.Messages, llm.UserText("more"))
	}
	if len(s.convs) != 2 {
		t.Fatalf("%d caches kept for two conversations", len(s.convs))
	}
	// A conversation whose first message is another one is new.
	fresh := &llm.Request{Messages: append([]llm.Message{llm.UserText("summary")}, a.Messages[1:]...)}
	conv := s.Lock(fresh)
	defer conv.Unlock()
	if len(conv.Cache) != 0 {
		t.Fatalf("a compacted conversation found the cache %v", conv.Cache)
	}
}

// A conversation unused for IdleRequests requests is dropped, so the one
// a compaction replaced does not stay; beyond MaxConversations the least
// recently used one goes.
func TestConversationsDropTheIdleAndTheOldest(t *testing.T) {
	var s Conversations[int]
	use := func(req *llm.Request) int {
		c := s.Lock(req)
		defer c.Unlock()
		c.Cache++
		return c.Cache
	}
	old, live := convo(1), convo(1)
	use(old)
	for range IdleRequests - 1 {
		use(live)
	}
	if n := use(old); n != 2 {
		t.Fatalf("a conversation used within %d requests was dropped (count %d)", IdleRequests, n)
	}
	for range IdleRequests + 1 {
		use(live)
	}
	if n := use(old); n != 1 {
		t.Fatalf("a conversation idle for %d requests was kept (count %d)", IdleRequests+1, n)
	}

	many := make([]*llm.Request, MaxConversations+1)
	for i := range many {
		many[i] = convo(1)
		use(many[i])
		use(many[i]) // not a one-shot
	}
	if len(s.convs) != MaxConversations {
		t.Fatalf("%d caches kept, want at most %d", len(s.convs), MaxConversations)
	}
	if n := use(many[len(many)-1]); n != 3 {
		t.Fatal("the newest conversation was dropped")
	}
	if n := use(old); n != 1 {
		t.Fatal("the least recently used conversation was kept beyond the most")
	}
}

// Requests of different conversations build at once: one conversation's
// lock does not hold up another's.
func TestConversationsLockPerConversation(t *testing.T) {
	var s Conversations[int]
	a := s.Lock(convo(1))
	defer a.Unlock()
	got := make(chan struct{})
	go func() {
		s.Lock(convo(1)).Unlock()
		close(got)
	}()
	<-got
}

// A caller that builds its messages anew for every request makes a new
// conversation each time: at most OneShots of those are kept, and they do
// not push out a conversation that goes on.
func TestConversationsKeepFewOneShots(t *testing.T) {
	var s Conversations[int]
	live := convo(1)
	s.Lock(live).Unlock()
	for range 10 {
		s.Lock(convo(1)).Unlock()
		s.Lock(live).Unlock()
	}
	if len(s.convs) != OneShots+1 {
		t.Fatalf("%d caches kept after ten one-shot requests beside a live conversation, want %d", len(s.convs), OneShots+1)
	}
	c := s.Lock(live)
	defer c.Unlock()
	if c.uses != 12 {
		t.Fatalf("the live conversation's cache was dropped: %d uses", c.uses)
	}
}

// Many conversations starting at once make more one-shots than are kept;
// those dropped are known when they come back and kept from then on.
func TestConversationsStartingAtOnceAreKept(t *testing.T) {
	var s Conversations[int]
	convs := make([]*llm.Request, 3*OneShots)
	for i := range convs {
		convs[i] = convo(1)
	}
	for round := range 3 {
		for _, req := range convs {
			c := s.Lock(req)
			c.Cache++
			c.Unlock()
		}
		if round > 0 && len(s.convs) != len(convs) {
			t.Fatalf("round %d: %d of %d conversations kept", round, len(s.convs), len(convs))
		}
	}
	for i, req := range convs {
		c := s.Lock(req)
		if c.Cache < 2 {
			t.Errorf("conversation %d was dropped after its second request (count %d)", i, c.Cache)
		}
		c.Unlock()
	}
}
