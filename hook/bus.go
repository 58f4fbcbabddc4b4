package hook

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/session"
)

// Observer receives events. It runs on its subscription's own goroutine,
// one event at a time, in seq order. It may not modify the event.
type Observer func(ev session.Event)

// Subscription describes one observer: a name for reports, the event type
// it wants ("*" for all) and the function.
type Subscription struct {
	Name string
	Type string
	Fn   Observer
}

// BusOptions configures a Bus. The zero value is usable.
type BusOptions struct {
	// Buffer is the number of events an observer may fall behind before
	// events are dropped for it. Zero means 1024.
	Buffer int
	// Logger receives reports of panics and drops. Nil discards them.
	Logger *slog.Logger
	// OnPanic, when set, is called (on the observer's goroutine) with the
	// recovered value of a panicking observer.
	OnPanic func(observer string, v any)
}

// ObserverStats counts what happened to one observer's events.
type ObserverStats struct {
	Name      string `json:"name"`
	Delivered int64  `json:"delivered"`
	Dropped   int64  `json:"dropped"`
	Panics    int64  `json:"panics"`
}

// Bus delivers events to observers without ever blocking the publisher.
// Each subscription has a goroutine and a bounded buffer; when the buffer
// is full the event is dropped for that observer and counted. A Bus is
// safe for concurrent use; Close stops every goroutine it started.
type Bus struct {
	opts   BusOptions
	mu     sync.Mutex
	sendMu sync.RWMutex // held for reading while sending, for writing while closing a channel
	subs   atomic.Pointer[[]*sub]
	wg     sync.WaitGroup
	closed bool
	stats  []*sub // every subscription ever made, for Stats
}

type sub struct {
	Subscription
	ch        chan session.Event
	delivered atomic.Int64
	dropped   atomic.Int64
	panics    atomic.Int64
	gone      bool
}

// NewBus returns a Bus with no subscriptions.
func NewBus(opts *BusOptions) *Bus {
	b := &Bus{}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.Buffer <= 0 {
		b.opts.Buffer = 1024
	}
	if b.opts.Logger == nil {
		b.opts.Logger = slog.New(slog.DiscardHandler)
	}
	return b
}

// Subscribe starts delivering events to s and returns a function that
// ends the subscription: events already buffered are still delivered, then
// the observer's goroutine exits. The returned function is idempotent.
func (b *Bus) Subscribe(s Subscription) (unsubscribe func()) {
	if s.Type == "" {
		s.Type = "*"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || s.Fn == nil {
		return func() {}
	}
	x := &sub{Subscription: s, ch: make(chan session.Event, b.opts.Buffer)}
	b.stats = append(b.stats, x)
	b.setSubs(append(b.current(), x))
	b.wg.Add(1)
	go b.loop(x)
	return func() { b.remove(x) }
}

func (b *Bus) current() []*sub {
	if p := b.subs.Load(); p != nil {
		return *p
	}
	return nil
}

// setSubs publishes a fresh slice so Publish never sees one being changed.
func (b *Bus) setSubs(list []*sub) {
	cp := make([]*sub, len(list))
	copy(cp, list)
	b.subs.Store(&cp)
}

func (b *Bus) remove(x *sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if x.gone {
		return
	}
	var keep []*sub
	for _, s := range b.current() {
		if s != x {
			keep = append(keep, s)
		}
	}
	b.setSubs(keep)
	b.sendMu.Lock()
	x.gone = true
	close(x.ch)
	b.sendMu.Unlock()
}

func (b *Bus) loop(x *sub) {
	defer b.wg.Done()
	for ev := range x.ch {
		b.deliver(x, ev)
	}
	if n := x.dropped.Load(); n > 0 {
		b.opts.Logger.Warn("observer was too slow; events were dropped", "observer", x.Name, "dropped", n)
	}
}

func (b *Bus) deliver(x *sub, ev session.Event) {
	defer func() {
		if r := recover(); r != nil {
			x.panics.Add(1)
			b.opts.Logger.Error("observer panicked; it keeps receiving events", "observer", x.Name, "panic", fmt.Sprint(r), "seq", ev.Seq)
			if b.opts.OnPanic != nil {
				func() {
					defer func() { _ = recover() }() // a broken reporter must not kill the observer
					b.opts.OnPanic(x.Name, r)
				}()
			}
		}
	}()
	x.Fn(ev)
	x.delivered.Add(1)
}

// Has reports whether any observer is subscribed.
func (b *Bus) Has() bool { return len(b.current()) > 0 }

// Publish offers ev to every matching observer. It never blocks: an
// observer whose buffer is full loses the event, and the loss is counted.
func (b *Bus) Publish(ev session.Event) { b.offer(ev, true) }

// PublishTransient offers a transient event (one that is never written
// to the log, such as a stream delta with Seq 0) to the observers of its
// exact type; "*" observers see only logged events.
func (b *Bus) PublishTransient(ev session.Event) { b.offer(ev, false) }

func (b *Bus) offer(ev session.Event, logged bool) {
	p := b.subs.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	typ := ev.Data.EventType()
	b.sendMu.RLock()
	defer b.sendMu.RUnlock()
	for _, x := range *b.subs.Load() {
		if x.gone || (x.Type != typ && (!logged || x.Type != "*")) {
			continue
		}
		select {
		case x.ch <- ev:
		default:
			x.dropped.Add(1)
		}
	}
}

// Stats reports, for every subscription made, how many events it was
// given, lost and panicked on.
func (b *Bus) Stats() []ObserverStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ObserverStats, 0, len(b.stats))
	for _, x := range b.stats {
		out = append(out, ObserverStats{Name: x.Name, Delivered: x.delivered.Load(), Dropped: x.dropped.Load(), Panics: x.panics.Load()})
	}
	return out
}

// Close ends every subscription, lets each observer finish the events it
// has buffered, and waits for their goroutines. It is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.wg.Wait()
		return
	}
	b.closed = true
	list := b.current()
	b.mu.Unlock()
	for _, x := range list {
		b.remove(x)
	}
	b.wg.Wait()
}
