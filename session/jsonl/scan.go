package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reinhq/rein/session"
)

// scanned is what a full check of a session file found.
type scanned struct {
	hdr      *header
	end      int64 // offset just after the last committed line
	lastSeq  int64
	tailOff  int64 // offset of the earliest turn.start of a turn left open, or end
	tailLine int   // its line number
	torn     bool  // the file holds bytes after end that are not committed
}

// scanFile checks a whole session file and finds its committed end. A
// torn final line, and a corrupt line or seq gap with no turn.end after
// it, are uncommitted: end stops before them. A corrupt line or seq gap
// followed by a turn.end is an error wrapping session.ErrCorrupt that
// names the file and line.
//
// If keep is not nil, the scan decodes the lines it needs into it (see
// keeper) and records where they end.
func scanFile(f *os.File, name string, keep *keeper) (*scanned, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("jsonl: %s: %w", name, err)
	}
	lr := newLineReader(io.NewSectionReader(f, 0, st.Size()), 0, 0)
	line, complete, err := lr.next()
	if err == io.EOF || (err == nil && !complete) {
		return nil, fmt.Errorf("jsonl: %s line 1: missing header: %w", name, session.ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: read %s: %w", name, err)
	}
	hdr, err := decodeHeader(line, name)
	if err != nil {
		return nil, err
	}
	sc := &scanned{hdr: hdr, end: lr.off}
	var dec session.Decoder
	if keep != nil {
		keep.used, keep.off = true, keep.off || st.Size() > keepBudget
		keep.end = cursor{off: lr.off, line: lr.line}
		var ok bool
		if keep.end.dev, keep.end.ino, ok = fileID(f); !ok {
			keep.off = true
		}
	}
	lastMark := lr.off
	type mark struct {
		off  int64
		line int
	}
	open := map[session.RunID]mark{} // lanes with an open turn → its turn.start line
	defer func() {
		sc.tailOff, sc.tailLine = sc.end, 0
		for _, m := range open {
			if m.off < sc.tailOff {
				sc.tailOff, sc.tailLine = m.off, m.line
			}
		}
	}()
	for {
		start, lineNo := lr.off, lr.line+1
		if keep != nil && !keep.off && lr.off-lastMark >= markEvery {
			keep.marks = append(keep.marks, cursor{seq: sc.lastSeq, off: lr.off, line: lr.line, dev: keep.end.dev, ino: keep.end.ino})
			lastMark = lr.off
		}
		line, complete, err := lr.next()
		if err == io.EOF {
			return sc, nil
		}
		if err != nil {
			return nil, fmt.Errorf("jsonl: read %s: %w", name, err)
		}
		if !complete {
			sc.torn = true
			return sc, nil
		}
		h, derr := scanHead(&dec, line, keep.keepLine(line))
		if derr == nil && h.Seq != sc.lastSeq+1 {
			derr = fmt.Errorf("seq %d after seq %d", h.Seq, sc.lastSeq)
		}
		if derr != nil {
			if err := corruptIfCommittedAfter(lr, name, lineNo, derr, h.Type == session.TypeTurnEnd); err != nil {
				return nil, err
			}
			sc.torn = true
			return sc, nil
		}
		sc.lastSeq = h.Seq + int64(h.Pack) - 1
		sc.end = lr.off
		if keep != nil {
			keep.end.seq, keep.end.off, keep.end.line = sc.lastSeq, lr.off, lr.line
			keep.n = keep.count
		}
		switch h.Type {
		case session.TypeTurnStart:
			open[h.lane()] = mark{start, lineNo}
		case session.TypeTurnEnd:
			delete(open, h.lane())
		}
	}
}

// corruptIfCommittedAfter is called at a bad line. If a turn.end follows
// it (or is the bad line itself), events that were committed are damaged:
// it returns the error naming the line. Otherwise the bad line starts an
// uncommitted tail and it returns nil.
func corruptIfCommittedAfter(lr *lineReader, name string, lineNo int, cause error, isTurnEnd bool) error {
	corrupt := fmt.Errorf("jsonl: %s line %d: %v, before a committed turn.end; restore the file from a backup or cut it before this line: %w",
		name, lineNo, cause, session.ErrCorrupt)
	if isTurnEnd {
		return corrupt
	}
	for {
		line, complete, err := lr.next()
		if err != nil || !complete {
			return nil
		}
		if h, err := decodeHead(line); err == nil && h.Type == session.TypeTurnEnd {
			return corrupt
		}
	}
}

var typeKey = []byte(`,"type":"`)

// scanHead is decodeHead made cheap for the lines this package writes:
// the seq and count come from the line's first bytes, the syntax is
// checked without decoding, and the type is the first "type" key (the
// header fields before it are strings, in which a raw `,"type":"` cannot
// occur). Only turn boundaries, whose lane matters, are decoded, by d.
// A line checked already (decoded whole) is not checked again.
func scanHead(d *session.Decoder, line []byte, checked bool) (lineHead, error) {
	seq, count, ok := fastHead(line)
	if !ok {
		return decodeHead(line)
	}
	if !checked && !validJSON(line) {
		return lineHead{}, errors.New("line is not valid JSON")
	}
	i := bytes.Index(line, typeKey)
	if i < 0 {
		return decodeHead(line)
	}
	rest := line[i+len(typeKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return decodeHead(line)
	}
	typ := rest[:j]
	if bytes.HasPrefix(typ, []byte("turn.")) {
		if ev, err := d.Decode(line); err == nil && ev.Seq == seq && seq >= 1 {
			return lineHead{Pack: 1, Seq: seq, Type: ev.Data.EventType(), Run: ev.Run, ParentRun: ev.ParentRun}, nil
		}
		return decodeHead(line)
	}
	// The scan looks only for turn boundaries; another type is not kept.
	return lineHead{Pack: count, Seq: seq}, nil
}
