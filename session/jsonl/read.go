package jsonl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"sort"
	"sync"
	"syscall"

	"github.com/reinhq/rein/session"
)

// Events yields the events of session id with seq > afterSeq. It reads
// the committed events: a torn or uncommitted tail is not yielded, and a
// corrupt line before a committed turn.end ends the stream with an error
// wrapping session.ErrCorrupt that names the line.
func (s *Store) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		st, err := s.known(id)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		var keep *keeper
		st.mu.Lock()
		if s.scans(st, false) {
			keep = &keeper{after: afterSeq}
		}
		err = s.check(ctx, st, false, keep)
		st.mu.Unlock()
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		var from *cursor
		if keep != nil && keep.used && !keep.off {
			// The scan decoded what this read wants: yield it, then
			// read on from where the scan stopped.
			for _, m := range keep.marks {
				st.marks.add(m)
			}
			if !keep.yield(ctx, yield) {
				return
			}
			afterSeq, from = max(afterSeq, keep.end.seq), &keep.end
			keep.blocks = nil
		}
		f, err := os.Open(s.Path(id))
		if err != nil {
			yield(session.Event{}, notFound(id, err))
			return
		}
		defer f.Close()
		limit := int64(-1)
		if st.held.Load() {
			limit = st.size.Load()
		}
		if from == nil {
			from = st.cur.Load()
		}
		if from == nil || from.seq > afterSeq {
			from = st.marks.find(afterSeq)
		}
		cur, err := readEvents(ctx, f, limit, afterSeq, from, st.marks.add, yield)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		if cur != nil {
			if old := st.cur.Load(); old == nil || old.off < cur.off {
				st.cur.CompareAndSwap(old, cur)
			}
		}
	}
}

// cursor is a place in a session file where a reader can start: just
// after the line holding seq, line number line, at byte off, in the file
// dev/ino. Lines before a cursor were read whole and in order, and are
// never cut (only an uncommitted tail is), so a later read that wants
// only newer events can start there: reading what is new costs what is
// new, not the whole log.
type cursor struct {
	seq      int64
	off      int64
	line     int
	dev, ino uint64
}

func fileID(f *os.File) (dev, ino uint64, ok bool) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, false
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(sys.Dev), sys.Ino, true
}

// readEvents yields the committed events of f with seq > afterSeq,
// reading up to byte limit (all if negative). It starts at from if that
// is a cursor of f at or before afterSeq. It returns an error to yield,
// or nil when done or stopped, and the cursor at the end of what it read
// (nil if it did not reach the end).
//
// Every markEvery bytes it passes mark a cursor, if mark is not nil.
func readEvents(ctx context.Context, f *os.File, limit, afterSeq int64, from *cursor, mark func(cursor), yield func(session.Event, error) bool) (*cursor, error) {
	name := f.Name()
	dev, ino, idOK := fileID(f)
	start := cursor{dev: dev, ino: ino}
	if from != nil && idOK && from.dev == dev && from.ino == ino && from.seq <= afterSeq && (limit < 0 || from.off <= limit) {
		start = *from
	}
	end := int64(1<<63 - 1)
	if limit >= 0 {
		end = limit
	}
	lr := newLineReader(io.NewSectionReader(f, start.off, end-start.off), start.off, start.line)
	var dec lineDecoder
	if start.off == 0 {
		line, complete, err := lr.next()
		if err == io.EOF || (err == nil && !complete) {
			return nil, fmt.Errorf("jsonl: %s line 1: missing header: %w", name, session.ErrCorrupt)
		}
		if err != nil {
			return nil, fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		if _, err := decodeHeader(line, name); err != nil {
			return nil, err
		}
	}
	var (
		evs      []session.Event
		last     = start.seq
		lastMark = start.off
	)
	for n := 0; ; n++ {
		if n&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if mark != nil && idOK && lr.off-lastMark >= markEvery {
			mark(cursor{seq: last, off: lr.off, line: lr.line, dev: dev, ino: ino})
			lastMark = lr.off
		}
		line, complete, err := lr.next()
		if err == io.EOF || (err == nil && !complete) {
			if !idOK {
				return nil, nil
			}
			off := lr.off
			if !complete && err == nil {
				off -= int64(len(line))
			}
			return &cursor{seq: last, off: off, line: lr.line - b2i(!complete && err == nil), dev: dev, ino: ino}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		lineNo := lr.line
		// Lines wholly before afterSeq are checked, not decoded.
		if seq, count, ok := fastHead(line); ok && seq == last+1 && seq+int64(count)-1 <= afterSeq && validJSON(line) {
			last = seq + int64(count) - 1
			continue
		}
		evs, err = dec.decodeLine(evs[:0], line)
		isTurnEnd := false
		if err == nil {
			isTurnEnd = evs[len(evs)-1].Data.EventType() == session.TypeTurnEnd
			if evs[0].Seq != last+1 {
				err = fmt.Errorf("seq %d after seq %d", evs[0].Seq, last)
			}
		}
		if err != nil {
			return nil, corruptIfCommittedAfter(lr, name, lineNo, err, isTurnEnd)
		}
		last = evs[len(evs)-1].Seq
		for i := range evs {
			if evs[i].Seq <= afterSeq {
				continue
			}
			if !yield(evs[i], nil) {
				return nil, nil
			}
		}
	}
}

// markEvery is the distance between the places a reader remembers in a
// session file, so that reading the end of a long log skips the rest.
const markEvery = 16 << 10

// marks are cursors into one session file, in order.
type marks struct {
	mu   sync.Mutex
	list []cursor
}

// add remembers c if it lies past every cursor already known.
func (m *marks) add(c cursor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.list); n > 0 {
		if last := m.list[n-1]; last.dev != c.dev || last.ino != c.ino {
			m.list = m.list[:0] // the file was replaced
		} else if c.off <= last.off {
			return
		}
	}
	m.list = append(m.list, c)
}

// find returns the last cursor at or before afterSeq, or nil.
func (m *marks) find(afterSeq int64) *cursor {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.list), func(i int) bool { return m.list[i].seq > afterSeq })
	if i == 0 {
		return nil
	}
	c := m.list[i-1]
	return &c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fastHead reads the first seq and the event count of a line from its
// first bytes, as this package writes them: {"seq":N, or {"pack":C,"seq":N,.
func fastHead(line []byte) (seq int64, count int, ok bool) {
	count = 1
	rest, isPack := bytes.CutPrefix(line, packPrefix)
	if isPack {
		c, r, ok := leadingInt(rest)
		if !ok || c < 1 {
			return 0, 0, false
		}
		count = int(c)
		if rest, ok = bytes.CutPrefix(r, []byte(`,"seq":`)); !ok {
			return 0, 0, false
		}
	} else if rest, ok = bytes.CutPrefix(line, []byte(`{"seq":`)); !ok {
		return 0, 0, false
	}
	seq, r, ok := leadingInt(rest)
	if !ok || len(r) == 0 || r[0] != ',' {
		return 0, 0, false
	}
	return seq, count, true
}

func leadingInt(b []byte) (int64, []byte, bool) {
	var n int64
	i := 0
	for ; i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	return n, b[i:], i > 0
}
