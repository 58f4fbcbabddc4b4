package serve

import (
	"context"
	"strconv"
	"sync"

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

func (f *feed) run(ctx context.Context, st session.Store, id session.ID, after int64) {
	defer close(f.done)
	var buf []byte
	for ev, err := range session.Follow(ctx, st, id, after) {
		if err != nil {
			f.mu.Lock()
			f.err = err
			close(f.wake)
			f.wake = make(chan struct{})
			f.mu.Unlock()
			return
		}
		var ferr error
		if buf, ferr = appendFrame(buf[:0], ev); ferr != nil {
			buf = []byte(": unencodable event " + strconv.FormatInt(ev.Seq, 10) + "\n\n")
		}
		b := append([]byte(nil), buf...)
		f.mu.Lock()
		if len(f.frames) >= feedKeep {
			n := copy(f.frames, f.frames[feedKeep/2:])
			clear(f.frames[n:])
			f.frames = f.frames[:n]
			f.first += feedKeep / 2
		}
		f.frames = append(f.frames, b)
		close(f.wake)
		f.wake = make(chan struct{})
		f.mu.Unlock()
	}
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
