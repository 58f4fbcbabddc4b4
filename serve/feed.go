package serve

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/reinhq/rein/session"
)

// feedKeep is how many recent frames a feed keeps; a client further
// behind reads the store until it is back within them.
const feedKeep = 4096

// frame is one encoded SSE frame of a feed.
type frame struct {
	seq  int64  // the event's seq; 0 for a transient event
	at   int64  // the last persisted seq at or before this frame
	data []byte // the whole frame, never changed once made
}

// transient is a transient event's frame waiting for its place: after
// the persisted event at, which the feed may not have read yet.
type transient struct {
	data []byte
	at   int64
}

// feed is one session's event stream for all its clients: each event is
// read from the store and encoded as an SSE frame once, however many
// clients there are, and transient events (deltas, approval requests) are
// put in their place among them. Clients copy frames at their own pace.
// Nothing a client does can block the feed, and the feed never blocks the
// run: it only reads what the run appended and takes what it publishes
// without waiting.
//
// Clients are woken through one channel, closed at most once every
// interval: what arrives in between is gathered into their next write,
// so a client costs a wake and a write per interval, not per event.
type feed struct {
	mu      sync.Mutex
	base    int     // index of frames[0] among all the frames ever made
	frames  []frame // in order
	last    int64   // the last persisted seq placed
	floor   int64   // persisted frames up to floor may be gone: read the store
	waiting []transient
	wake    chan struct{} // closed, and replaced, when there is more
	every   time.Duration // the least time between two wakes
	woke    time.Time     // the last wake
	timer   *time.Timer   // a wake due, or nil
	clients int
	err     error // the feed's end: a store error, or errDeleted
	stop    context.CancelFunc
	done    chan struct{}
}

// startFeed returns l's feed, starting it after the log's last seq unless
// it runs. l.mu must be held.
func (l *live) startFeed() *feed {
	if l.feed != nil {
		return l.feed
	}
	var after int64
	if info, err := l.s.opts.Store.Info(l.s.ctx, l.id); err == nil {
		after = info.LastSeq
	}
	fctx, stop := context.WithCancel(l.s.ctx)
	f := &feed{last: after, floor: after, wake: make(chan struct{}), every: l.s.opts.FlushInterval, stop: stop, done: make(chan struct{})}
	l.feed = f
	go f.run(fctx, l.s.opts.Store, l.id, after)
	return f
}

// run reads the log as session.Follow does, but a whole store read at a
// time, so the feed takes each batch the run appends at once.
func (f *feed) run(ctx context.Context, st session.Store, id session.ID, after int64) {
	defer close(f.done)
	// However the feed ends, its clients are told: a store error, or
	// errDeleted when the session was deleted or the server closes.
	end := errDeleted
	defer func() {
		f.mu.Lock()
		f.err = end
		if f.timer != nil {
			f.timer.Stop()
		}
		f.fire()
		f.mu.Unlock()
	}()
	var notify <-chan struct{}
	if n, ok := st.(session.Notifier); ok {
		ch, cancel := n.Subscribe(id)
		defer cancel()
		notify = ch
	}
	timer := time.NewTimer(session.DefaultFollowInterval)
	defer timer.Stop()
	last := after
	var buf []byte
	var batch []frame
	for {
		batch = batch[:0]
		for ev, err := range st.Events(ctx, id, last) {
			if err != nil {
				if ctx.Err() == nil {
					end = err
				}
				return
			}
			if ev.Seq <= last {
				continue
			}
			last = ev.Seq
			var ferr error
			if buf, ferr = appendFrame(buf[:0], ev); ferr != nil {
				buf = []byte(": unencodable event " + strconv.FormatInt(ev.Seq, 10) + "\n\n")
			}
			batch = append(batch, frame{seq: ev.Seq, at: ev.Seq, data: append([]byte(nil), buf...)})
		}
		if len(batch) > 0 {
			f.add(batch)
		}
		timer.Reset(session.DefaultFollowInterval)
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-timer.C:
		}
	}
}

// add places persisted frames, then the transient events that waited for
// them, and wakes the clients.
func (f *feed) add(batch []frame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.place(batch...)
	f.last = batch[len(batch)-1].seq
	n := 0
	for _, t := range f.waiting {
		if t.at > f.last {
			break
		}
		f.place(frame{at: f.last, data: t.data})
		n++
	}
	f.waiting = f.waiting[:copy(f.waiting, f.waiting[n:])]
	f.signal()
}

// publish takes a transient event's frame, to follow the persisted event
// at; it never waits.
func (f *feed) publish(data []byte, at int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiting) > 0 || at > f.last {
		if len(f.waiting) < feedKeep {
			f.waiting = append(f.waiting, transient{data: data, at: at})
		}
		return
	}
	f.place(frame{at: f.last, data: data})
	f.signal()
}

// place appends frames, dropping the oldest half when the feed is full;
// a transient frame is placed with at = f.last, so frames stay in order
// of at. f.mu must be held.
func (f *feed) place(fr ...frame) {
	if len(f.frames)+len(fr) > feedKeep {
		drop := min(len(f.frames), len(f.frames)+len(fr)-feedKeep/2)
		for _, d := range f.frames[:drop] {
			f.floor = max(f.floor, d.at)
		}
		n := copy(f.frames, f.frames[drop:])
		clear(f.frames[n:])
		f.frames = f.frames[:n]
		f.base += drop
	}
	f.frames = append(f.frames, fr...)
}

// signal wakes the clients now, or at the end of the interval since the
// last wake. f.mu must be held.
func (f *feed) signal() {
	if f.timer != nil {
		return // a wake is due
	}
	if wait := time.Until(f.woke.Add(f.every)); f.every > 0 && wait > 0 {
		f.timer = time.AfterFunc(wait, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.timer != nil {
				f.fire()
			}
		})
		return
	}
	f.fire()
}

// fire wakes the clients. f.mu must be held.
func (f *feed) fire() {
	f.timer = nil
	f.woke = time.Now()
	close(f.wake)
	f.wake = make(chan struct{})
}

// feedCursor is where one client is in a feed.
type feedCursor struct {
	pos  int   // the index of the next frame; transient frames before it are not this client's
	sent int64 // the last persisted seq the client has
	out  [][]byte
}

// join makes a feedCursor for a client that has the events up to sent;
// transient events from now on are its own.
func (f *feed) join(sent int64) *feedCursor {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clients++
	return &feedCursor{pos: f.base + len(f.frames), sent: sent}
}

// leave ends a client's part and reports whether it was the last.
func (f *feed) leave() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clients--
	return f.clients == 0
}

// idle reports whether the feed has no clients.
func (f *feed) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clients == 0
}

// next gathers into c.out the frames c has not had and moves c past them.
// behind means c needs the stored events up to floor first; wake fires
// when there is more; err is the feed's end, once c has had everything.
func (f *feed) next(c *feedCursor) (behind bool, floor int64, wake <-chan struct{}, err error) {
	c.out = c.out[:0]
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.sent < f.floor {
		return true, f.floor, f.wake, nil
	}
	i := sort.Search(len(f.frames), func(i int) bool { return f.frames[i].at >= c.sent })
	for ; i < len(f.frames); i++ {
		fr := &f.frames[i]
		if (fr.seq > 0 && fr.seq <= c.sent) || (fr.seq == 0 && f.base+i < c.pos) {
			continue
		}
		c.out = append(c.out, fr.data)
	}
	c.pos = f.base + len(f.frames)
	c.sent = max(c.sent, f.last)
	return false, 0, f.wake, f.err
}

// close stops the feed and waits for it.
func (f *feed) close() {
	f.stop()
	<-f.done
}

// appendFrame appends ev as an SSE frame: id: SEQ, then its JSON.
func appendFrame(dst []byte, ev session.Event) ([]byte, error) {
	dst = strconv.AppendInt(append(dst, "id: "...), ev.Seq, 10)
	dst = append(dst, "\ndata: "...)
	dst, err := session.AppendEventJSON(dst, ev)
	return append(dst, "\n\n"...), err
}

// dataFrame is a transient event's SSE frame: no id, so the client's
// last event id stays the last persisted seq.
func dataFrame(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	return append(append(append(out, "data: "...), b...), "\n\n"...)
}
