package session

import "sync"

// Broadcaster implements Notifier for a Store that sees its own appends:
// the Store calls Notify after each append and Close when it closes.
// The zero value is ready to use and it is safe for concurrent use.
//
// Subscribe hands out channels with a buffer of one, so a burst of
// appends wakes a slow subscriber once, and Notify never blocks.
type Broadcaster struct {
	mu     sync.Mutex
	closed bool
	subs   map[ID]map[chan struct{}]struct{}
}

// Subscribe implements Notifier: the channel receives a value soon after
// each Notify of id until the returned function is called. After Close
// the channel never fires. The channel is never closed.
func (b *Broadcaster) Subscribe(id ID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ch, func() {}
	}
	if b.subs == nil {
		b.subs = map[ID]map[chan struct{}]struct{}{}
	}
	if b.subs[id] == nil {
		b.subs[id] = map[chan struct{}]struct{}{}
	}
	b.subs[id][ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[id], ch)
		if len(b.subs[id]) == 0 {
			delete(b.subs, id)
		}
		b.mu.Unlock()
	}
}

// Notify wakes every subscriber of id without blocking.
func (b *Broadcaster) Notify(id ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Close drops every subscription: no channel fires again and later
// Subscribe calls get one that never fires. It is idempotent.
func (b *Broadcaster) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.subs = nil
}

var _ Notifier = (*Broadcaster)(nil)
