package serve

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/reinhq/rein/session"
)

// feedKeep is how many recent frames a feed keeps; a client further
// behind reads the store until it is back within them.
const feedKeep = 4096

// feed follows one session's log for all its event streams: each event is
// read from the store and encoded as an SSE frame once, however many
// clients there are, and kept for a while so each client copies frames at
// its own pace. Nothing a client does can block the feed, and the feed
// never blocks the run: it only reads what the run appended.
type feed struct {
	mu     sync.Mutex
	first  int64 // seq of frames[0]; frames run first, first+1, …
	frames [][]byte
	wake   chan struct{} // closed, and replaced, at every new frame
	err    error         // the store's last word (the session was deleted)
	stop   context.CancelFunc
	done   chan struct{}
}

// startFeed starts l's feed after the log's last seq, unless it runs.
func (l *live) startFeed(ctx context.Context) *feed {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.feed != nil {
		return l.feed
	}
	var after int64
	if info, err := l.s.opts.Store.Info(ctx, l.id); err == nil {
		after = info.LastSeq
	}
	fctx, stop := context.WithCancel(l.s.ctx)
	f := &feed{first: after + 1, wake: make(chan struct{}), stop: stop, done: make(chan struct{})}
	l.feed = f
	go f.run(fctx, l.s.opts.Store, l.id, after)
	return f
}

// run reads the log as session.Follow does, but a whole store read at a
// time, so the streams wake once per batch the run appends rather than
// once per event.
func (f *feed) run(ctx context.Context, st session.Store, id session.ID, after int64) {
	defer close(f.done)
	// However the feed ends, its streams are told: a store error, or
	// errDeleted when the session was deleted or the server closes.
	end := errDeleted
	defer func() {
		f.mu.Lock()
		f.err = end
		close(f.wake)
		f.wake = make(chan struct{})
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
	for {
		var batch [][]byte
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
			batch = append(batch, append([]byte(nil), buf...))
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

// add appends frames and wakes the streams once.
func (f *feed) add(batch [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.frames)+len(batch) > feedKeep {
		drop := min(len(f.frames), len(f.frames)+len(batch)-feedKeep/2)
		n := copy(f.frames, f.frames[drop:])
		clear(f.frames[n:])
		f.frames = f.frames[:n]
		f.first += int64(drop)
	}
	f.frames = append(f.frames, batch...)
	close(f.wake)
	f.wake = make(chan struct{})
}

// close stops the feed and waits for it.
func (f *feed) close() {
	f.stop()
	<-f.done
}

// since returns the frames after seq and the seq of the last one; behind
// when seq is older than the frames kept (read the store up to first-1
// first); wake fires when there is more.
func (f *feed) since(seq int64) (frames [][]byte, last int64, behind bool, first int64, wake <-chan struct{}, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq < f.first-1 {
		return nil, seq, true, f.first, f.wake, nil
	}
	i := int(seq - f.first + 1)
	if i < len(f.frames) {
		frames = f.frames[i:]
	}
	return frames, f.first + int64(len(f.frames)) - 1, false, f.first, f.wake, f.err
}

// appendFrame appends ev as an SSE frame: id: SEQ, then its JSON.
func appendFrame(dst []byte, ev session.Event) ([]byte, error) {
	dst = strconv.AppendInt(append(dst, "id: "...), ev.Seq, 10)
	dst = append(dst, "\ndata: "...)
	dst, err := session.AppendEventJSON(dst, ev)
	return append(dst, "\n\n"...), err
}
