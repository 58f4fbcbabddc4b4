package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/session"
)

// publish hands a transient event to the session's stream, encoded once
// for every client, after the last event the turn has written; without a
// stream nobody is listening. It never waits.
func (l *live) publish(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.feed != nil {
		l.feed.publish(dataFrame(b), l.last)
	}
}

// subscribe joins a client that has the events up to sent to the
// session's stream. intro holds the calls already waiting for approval,
// to send once the client has the events up to introAt.
// f is nil when l was evicted meanwhile: take a new entry.
func (l *live) subscribe(sent int64) (f *feed, c *feedCursor, intro [][]byte, introAt int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.evicted {
		return nil, nil, nil, 0
	}
	for _, p := range l.pending {
		if b, err := json.Marshal(approvalEvent(l.id, p)); err == nil {
			intro = append(intro, dataFrame(b))
		}
	}
	f = l.startFeed()
	return f, f.join(sent), intro, l.last
}

// events serves GET …/events: Server-Sent Events unless NDJSON is asked
// for (Accept: application/x-ndjson or ?format=ndjson).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionID(w, r)
	if !ok {
		return
	}
	after, ok := resumePoint(w, r)
	if !ok {
		return
	}
	info, err := s.opts.Store.Info(r.Context(), id)
	if err != nil {
		writeStoreError(w, id, err)
		return
	}
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" && strings.Contains(r.Header.Get("Accept"), "application/x-ndjson") {
		format = "ndjson"
	}
	switch format {
	case "ndjson":
		s.streamNDJSON(w, r, info.ID, after, q.Get("follow") == "true" || q.Get("follow") == "1")
	case "", "sse":
		s.streamSSE(w, r, info.ID, after)
	default:
		writeError(w, http.StatusBadRequest, "bad_format", fmt.Sprintf("format %q: use sse (the default) or ndjson", format))
	}
}

// resumePoint reads where a stream starts: Last-Event-ID, else ?after.
func resumePoint(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v, what := r.Header.Get("Last-Event-ID"), "the Last-Event-ID header"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "bad_seq", fmt.Sprintf("%s is %q: give the seq of the last event you have (0 for all)", what, v))
		return 0, false
	}
	return n, true
}

// follow feeds the log's events after seq to a channel, from a goroutine
// that ends when ctx does; wait returns when it has.
func (s *Server) follow(ctx context.Context, id session.ID, after int64) (evs <-chan session.Event, errc <-chan error, wait func()) {
	ch, ec, done := make(chan session.Event, 64), make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for ev, err := range session.Follow(ctx, s.opts.Store, id, after) {
			if err != nil {
				ec <- err
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, ec, func() { <-done }
}

// streamSSE serves the log after a seq and then every new event, each with
// id: SEQ so a reconnecting client resumes exactly after the last one it
// saw, and transient events (deltas, approval requests) without an id.
// A client behind the session's feed reads the store itself until it has
// caught up, then copies the feed's frames: whatever gathered since its
// last wake, in one write.
func (s *Server) streamSSE(w http.ResponseWriter, r *http.Request, id session.ID, after int64) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	var l *live
	var fd *feed
	var cur *feedCursor
	var intro [][]byte
	var introAt int64
	for fd == nil {
		var err error
		if l, err = s.entry(id); err != nil {
			writeError(w, http.StatusServiceUnavailable, "shutting_down", "the server is shutting down; reconnect to its next start")
			return
		}
		fd, cur, intro, introAt = l.subscribe(after)
	}
	defer func() {
		if fd.leave() {
			l.idle()
		}
	}()

	sw := s.startSSE(w, id)
	tick := time.NewTicker(s.opts.Heartbeat)
	defer tick.Stop()
	for sw.err == nil {
		behind, floor, wake, ferr := fd.next(cur)
		if behind {
			cur.sent = s.replay(ctx, sw, id, cur.sent, floor)
			sw.flush()
			continue
		}
		if intro != nil && cur.sent >= introAt {
			cur.out = append(intro, cur.out...)
			intro = nil
		}
		for _, b := range cur.out {
			sw.raw(b)
		}
		if len(cur.out) > 0 {
			sw.flush()
		}
		if ferr != nil {
			if !errors.Is(ferr, session.ErrNotFound) {
				sw.comment("error: " + ferr.Error())
				sw.flush()
			}
			return
		}
		select {
		case <-wake:
		case <-tick.C:
			sw.comment("ping")
			sw.flush()
		case <-ctx.Done():
			return
		}
	}
}

// startSSE sends the headers of an event stream and a first comment, so
// the client knows the stream is open.
func (s *Server) startSSE(w http.ResponseWriter, id session.ID) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	// Over HTTP/1.1, no chunked encoding: the stream ends when the
	// connection does, as the SSE recommendation suggests, and each
	// flush is one write to the socket rather than a chunk's three.
	h.Set("Transfer-Encoding", "identity")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: bufio.NewWriterSize(w, 32<<10), rc: http.NewResponseController(w), timeout: s.opts.WriteTimeout}
	sw.comment("rein " + string(id))
	sw.flush()
	return sw
}

// replay writes the stored events after seq up to upTo and returns the
// last seq written.
func (s *Server) replay(ctx context.Context, sw *sseWriter, id session.ID, seq, upTo int64) int64 {
	for ev, err := range s.opts.Store.Events(ctx, id, seq) {
		if err != nil {
			sw.err = err
			break
		}
		sw.event(ev)
		if sw.err != nil {
			break
		}
		seq = ev.Seq
		if seq >= upTo {
			break
		}
	}
	return seq
}

// sseWriter writes Server-Sent Events; the first error sticks.
type sseWriter struct {
	w       *bufio.Writer
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	err     error
}

func (sw *sseWriter) event(ev session.Event) {
	if sw.err != nil {
		return
	}
	sw.buf, sw.err = appendFrame(sw.buf[:0], ev)
	sw.raw(sw.buf)
}

// raw writes an encoded frame.
func (sw *sseWriter) raw(b []byte) {
	if sw.err == nil {
		_, sw.err = sw.w.Write(b)
	}
}

func (sw *sseWriter) comment(s string) {
	if sw.err != nil {
		return
	}
	_, sw.err = fmt.Fprintf(sw.w, ": %s\n\n", strings.ReplaceAll(s, "\n", " "))
}

func (sw *sseWriter) flush() {
	if sw.err != nil {
		return
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	if sw.err = sw.w.Flush(); sw.err == nil {
		sw.err = sw.rc.Flush()
	}
}

// streamNDJSON writes the events after seq, one JSON object a line, and
// with follow keeps writing new ones until the client leaves.
func (s *Server) streamNDJSON(w http.ResponseWriter, r *http.Request, id session.ID, after int64, follow bool) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	bw := bufio.NewWriterSize(w, 32<<10)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	write := func(ev session.Event) error {
		var err error
		if buf, err = session.AppendEventJSON(buf[:0], ev); err != nil {
			return err
		}
		_, err = bw.Write(append(buf, '\n'))
		return err
	}
	if !follow {
		for ev, err := range s.opts.Store.Events(r.Context(), id, after) {
			if err == nil {
				err = write(ev)
			}
			if err != nil {
				s.log.Debug("serve: ndjson stream ended", "session", id, "err", err)
				break
			}
		}
		_ = bw.Flush()
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	evs, _, wait := s.follow(ctx, id, after)
	defer wait()
	defer cancel()
	w.WriteHeader(http.StatusOK)
	for ev := range evs {
		if write(ev) != nil {
			return
		}
		if len(evs) == 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
			if bw.Flush() != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
