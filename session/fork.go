package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
)

// Fork makes a new session in st seeded with events 1..seq of session id:
// the copies carry the new session's id and the same seqs, and if seq
// cuts a turn open, the events RepairEvents returns are appended so the
// fork is balanced. The new session's Parent is id; its work directory
// and metadata are copied. A seq of 0 forks an empty session.
func Fork(ctx context.Context, st Store, id ID, seq int64) (ID, error) {
	info, err := st.Info(ctx, id)
	if err != nil {
		return "", fmt.Errorf("session: fork %s: %w", id, err)
	}
	if seq < 0 || seq > info.LastSeq {
		return "", fmt.Errorf("session: fork %s at seq %d: the session has seqs 1 to %d", id, seq, info.LastSeq)
	}
	events := make([]Event, 0, seq)
	if seq > 0 {
		for e, err := range st.Events(ctx, id, 0) {
			if err != nil {
				return "", fmt.Errorf("session: fork %s: %w", id, err)
			}
			if e.Seq > seq {
				break
			}
			events = append(events, e)
		}
	}
	if int64(len(events)) != seq {
		return "", fmt.Errorf("session: fork %s at seq %d: read %d events; the log has a gap", id, seq, len(events))
	}
	events = append(events, RepairEvents(events, time.Now())...)
	nid, err := st.Create(ctx, &CreateRequest{WorkDir: info.WorkDir, Parent: id, Meta: info.Meta})
	if err != nil {
		return "", fmt.Errorf("session: fork %s: %w", id, err)
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
		events[i].Session = nid
	}
	if len(events) > 0 {
		if err := st.Append(ctx, nid, events...); err != nil {
			_ = st.Delete(context.WithoutCancel(ctx), nid)
			return "", fmt.Errorf("session: fork %s: %w", id, err)
		}
	}
	return nid, nil
}

// DefaultFollowInterval is how often Follow polls a store that is not a
// Notifier.
const DefaultFollowInterval = 200 * time.Millisecond

// FollowOptions configures Follow. A nil *FollowOptions uses the defaults.
type FollowOptions struct {
	// Interval is how often to poll a store that is not a Notifier, and
	// the longest wait between reads of one that is (so a writer in
	// another process is seen too). Zero means DefaultFollowInterval.
	Interval time.Duration
}

// Follow yields the events of session id after afterSeq, then each new
// event as it is appended, until ctx is done (the iteration then simply
// ends). A store error, such as ErrNotFound after a Delete, is yielded
// last.
func Follow(ctx context.Context, st Store, id ID, afterSeq int64) iter.Seq2[Event, error] {
	return (*FollowOptions)(nil).Follow(ctx, st, id, afterSeq)
}

// Follow is the package-level Follow with the options o.
func (o *FollowOptions) Follow(ctx context.Context, st Store, id ID, afterSeq int64) iter.Seq2[Event, error] {
	interval := DefaultFollowInterval
	if o != nil && o.Interval > 0 {
		interval = o.Interval
	}
	return func(yield func(Event, error) bool) {
		var wake <-chan struct{}
		if n, ok := st.(Notifier); ok {
			ch, cancel := n.Subscribe(id)
			defer cancel()
			wake = ch
		}
		timer := time.NewTimer(interval)
		defer timer.Stop()
		last := afterSeq
		for {
			for e, err := range st.Events(ctx, id, last) {
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					yield(Event{}, err)
					return
				}
				if e.Seq <= last {
					continue
				}
				last = e.Seq
				if !yield(e, nil) {
					return
				}
			}
			timer.Reset(interval)
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-timer.C:
			}
		}
	}
}

// Export writes the events of session id to w as NDJSON: one event per
// line in the codec's shape.
func Export(ctx context.Context, st Store, id ID, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := make([]byte, 0, 1024)
	n := 0
	for e, err := range st.Events(ctx, id, 0) {
		if err != nil {
			return fmt.Errorf("session: export %s: %w", id, err)
		}
		buf, err = AppendEventJSON(buf[:0], e)
		if err != nil {
			return fmt.Errorf("session: export %s: %w", id, err)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("session: export %s: %w", id, err)
		}
		n++
	}
	if n == 0 {
		// An empty export is fine, but only of a session that exists.
		if _, err := st.Info(ctx, id); err != nil {
			return fmt.Errorf("session: export %s: %w", id, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("session: export %s: %w", id, err)
	}
	return nil
}

// importBatch is how many events Import appends at a time.
const importBatch = 256

// Import reads an NDJSON log written by Export from r and stores it in st
// under the session id the events carry (ErrExists if st has it). Seqs
// must run from 1 without a gap. Unknown event types are kept as they
// are. The metadata the log's session.meta events set (the last value of
// each key) is set on the session; the work directory and parent are not
// part of an export. On error the partly imported session is deleted.
func Import(ctx context.Context, st Store, r io.Reader) (ID, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		id    ID
		batch []Event
		line  int
		meta  = map[string]string{}
	)
	fail := func(err error) (ID, error) {
		if id != "" {
			_ = st.Delete(context.WithoutCancel(ctx), id)
		}
		return "", err
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := st.Append(ctx, id, batch...)
		batch = batch[:0]
		return err
	}
	for {
		b, rerr := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			if trimmed := trimSpace(b); len(trimmed) > 0 {
				e, err := DecodeEvent(trimmed)
				if err != nil {
					return fail(fmt.Errorf("session: import line %d: %w", line, err))
				}
				if id == "" {
					if e.Session == "" {
						return "", fmt.Errorf("session: import line %d: the event names no session", line)
					}
					if _, err := st.Create(ctx, &CreateRequest{ID: e.Session}); err != nil {
						return "", fmt.Errorf("session: import %s: %w", e.Session, err)
					}
					id = e.Session
				} else if e.Session != id {
					return fail(fmt.Errorf("session: import line %d: event of session %s in the log of %s", line, e.Session, id))
				}
				batch = append(batch, e)
				if m, ok := e.Data.(*SessionMeta); ok && m.Key != "" {
					meta[m.Key] = m.Value
				}
				if len(batch) == importBatch {
					if err := flush(); err != nil {
						return fail(fmt.Errorf("session: import line %d: %w", line, err))
					}
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fail(fmt.Errorf("session: import: %w", rerr))
		}
	}
	if id == "" {
		return "", errors.New("session: import: the input holds no events")
	}
	if err := flush(); err != nil {
		return fail(fmt.Errorf("session: import %s: %w", id, err))
	}
	for k, v := range meta {
		if err := st.SetMeta(ctx, id, k, v); err != nil {
			return fail(fmt.Errorf("session: import %s: %w", id, err))
		}
	}
	return id, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
