package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reinhq/rein/session"
)

// Format names and the version this package reads and writes.
const (
	formatName    = "rein.session"
	formatVersion = 1
)

// header is the first line of a session file.
type header struct {
	Format  string            `json:"format"`
	Version int               `json:"version"`
	ID      session.ID        `json:"id"`
	Created time.Time         `json:"created"`
	WorkDir string            `json:"workdir,omitempty"`
	Parent  session.ID        `json:"parent,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
}

// packed is a line holding a run of consecutive assistant.chunk events of
// one batch that share their header fields. Event i of the run has seq
// Seq+i, time Time+DT[i] nanoseconds and payload Data[i].
type packed struct {
	Pack      int                      `json:"pack"`
	Seq       int64                    `json:"seq"`
	Time      time.Time                `json:"time"`
	Session   session.ID               `json:"session,omitempty"`
	Turn      session.TurnID           `json:"turn,omitempty"`
	Run       session.RunID            `json:"run,omitempty"`
	ParentRun session.RunID            `json:"parent_run,omitempty"`
	Agent     string                   `json:"agent,omitempty"`
	Type      string                   `json:"type"`
	DT        []int64                  `json:"dt"`
	Data      []session.AssistantChunk `json:"data"`
}

// packPrefix starts every packed line and no event line, so a reader tells
// them apart without decoding.
var packPrefix = []byte(`{"pack":`)

// lineHead is the part of a line the open scan needs. scanHead leaves
// Type empty for a line that is not a turn boundary.
type lineHead struct {
	Pack      int           `json:"pack"`
	Seq       int64         `json:"seq"`
	Type      string        `json:"type"`
	Run       session.RunID `json:"run"`
	ParentRun session.RunID `json:"parent_run"`
}

// lane says which turn structure a line's events belong to: the main
// agent's ("") or one subagent run's; turns of different lanes interleave.
func (h *lineHead) lane() session.RunID {
	if h.ParentRun == "" {
		return ""
	}
	return h.Run
}

// decodeHeader reads and checks the first line of a session file.
func decodeHeader(line []byte, name string) (*header, error) {
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, fmt.Errorf("jsonl: %s line 1: header: %v: %w", name, err, session.ErrCorrupt)
	}
	if h.Format != formatName {
		return nil, fmt.Errorf("jsonl: %s line 1: format %q is not a rein session: %w", name, h.Format, session.ErrCorrupt)
	}
	if h.Version != formatVersion {
		return nil, fmt.Errorf("jsonl: %s: format version %d (this rein reads version %d); upgrade rein to read it: %w",
			name, h.Version, formatVersion, session.ErrUnsupported)
	}
	return &h, nil
}

// sameHeader reports whether a and b share the header fields a packed
// line stores once.
func sameHeader(a, b *session.Event) bool {
	return a.Session == b.Session && a.Turn == b.Turn && a.Run == b.Run &&
		a.ParentRun == b.ParentRun && a.Agent == b.Agent
}

// encodeBatch appends the lines of events to buf. A run of two or more
// consecutive assistant.chunk events with the same header fields becomes
// one packed line; every other event is one line in the session JSON shape.
// Events without a session are stamped with id.
func encodeBatch(buf []byte, id session.ID, events []session.Event) ([]byte, error) {
	for i := 0; i < len(events); {
		j := i + 1
		if _, ok := events[i].Data.(*session.AssistantChunk); ok {
			for j < len(events) {
				if _, ok := events[j].Data.(*session.AssistantChunk); !ok || !sameHeader(&events[i], &events[j]) {
					break
				}
				j++
			}
		}
		if j-i >= 2 {
			var err error
			if buf, err = encodePacked(buf, id, events[i:j]); err != nil {
				return buf, err
			}
			i = j
			continue
		}
		start := len(buf)
		var err error
		e := events[i]
		if e.Session == "" {
			e.Session = id
		}
		if buf, err = session.AppendEventJSON(buf, e); err != nil {
			return buf, fmt.Errorf("jsonl: encode event seq %d: %w", events[i].Seq, err)
		}
		if bytes.IndexByte(buf[start:], '\n') >= 0 {
			// encoding/json never emits a raw newline; a codec that did
			// would break the line format, so refuse rather than corrupt.
			return buf, fmt.Errorf("jsonl: encode event seq %d: encoding contains a newline", events[i].Seq)
		}
		buf = append(buf, '\n')
		i++
	}
	return buf, nil
}

func encodePacked(buf []byte, id session.ID, run []session.Event) ([]byte, error) {
	first := &run[0]
	sid := first.Session
	if sid == "" {
		sid = id
	}
	t0 := first.Time.Round(0)
	p := packed{
		Pack: len(run), Seq: first.Seq, Time: t0,
		Session: sid, Turn: first.Turn, Run: first.Run, ParentRun: first.ParentRun, Agent: first.Agent,
		Type: session.TypeAssistantChunk,
		DT:   make([]int64, len(run)),
		Data: make([]session.AssistantChunk, len(run)),
	}
	for k := range run {
		p.DT[k] = int64(run[k].Time.Round(0).Sub(t0))
		p.Data[k] = *run[k].Data.(*session.AssistantChunk)
	}
	b, err := json.Marshal(&p)
	if err != nil {
		return buf, fmt.Errorf("jsonl: encode chunks from seq %d: %w", first.Seq, err)
	}
	buf = append(buf, b...)
	return append(buf, '\n'), nil
}

// decodeLine decodes one event line into its events, appended to dst.
func (d *lineDecoder) decodeLine(dst []session.Event, line []byte) ([]session.Event, error) {
	if bytes.HasPrefix(line, packPrefix) {
		if out, ok := d.packedFast(dst, line); ok {
			return out, nil
		}
		return decodePacked(dst, line)
	}
	ev, err := d.dec.Decode(line)
	if err != nil {
		return dst, err
	}
	if ev.Data == nil {
		return dst, errors.New("event has no type")
	}
	return append(dst, ev), nil
}

// decodePacked decodes a packed line of any layout with encoding/json.
func decodePacked(dst []session.Event, line []byte) ([]session.Event, error) {
	var p packed
	if err := json.Unmarshal(line, &p); err != nil {
		return dst, err
	}
	if p.Pack != len(p.Data) || p.Pack != len(p.DT) || p.Pack < 1 {
		return dst, errors.New("packed line holds a wrong number of events")
	}
	for k := range p.Data {
		dst = append(dst, session.Event{
			Seq: p.Seq + int64(k), Time: p.Time.Add(time.Duration(p.DT[k])),
			Session: p.Session, Turn: p.Turn, Run: p.Run, ParentRun: p.ParentRun, Agent: p.Agent,
			Data: &p.Data[k],
		})
	}
	return dst, nil
}

// decodeHead decodes what the open scan needs of a line: its first seq,
// how many events it holds and its type.
func decodeHead(line []byte) (lineHead, error) {
	var h lineHead
	if err := json.Unmarshal(line, &h); err != nil {
		return h, err
	}
	if h.Pack == 0 {
		h.Pack = 1
	}
	if h.Seq < 1 || h.Type == "" {
		return h, errors.New("line is not an event")
	}
	return h, nil
}

// lineReader reads newline-terminated lines of any length.
type lineReader struct {
	r    *bufio.Reader
	buf  []byte
	off  int64 // offset of the next line
	line int   // number of the next line, from 1
}

// newLineReader reads lines from r, whose first byte is at offset off
// and starts line number line+1. Its buffer is 32 KiB, or the size of a
// shorter section: a new session's file is a few hundred bytes.
func newLineReader(r io.Reader, off int64, line int) *lineReader {
	size := 32 << 10
	if sr, ok := r.(*io.SectionReader); ok && sr.Size() < int64(size) {
		size = max(int(sr.Size()), 512)
	}
	return &lineReader{r: bufio.NewReaderSize(r, size), off: off, line: line}
}

// next returns the next line without its newline. complete is false for a
// final line with no newline (a torn or in-progress write). The returned
// slice is valid until the next call.
func (lr *lineReader) next() (line []byte, complete bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		frag, err := lr.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			lr.buf = append(lr.buf, frag...)
			continue
		}
		var b []byte
		if len(lr.buf) > 0 {
			lr.buf = append(lr.buf, frag...)
			b = lr.buf
		} else {
			b = frag
		}
		if err == io.EOF {
			if len(b) == 0 {
				return nil, false, io.EOF
			}
			lr.off += int64(len(b))
			lr.line++
			return b, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		lr.off += int64(len(b))
		lr.line++
		return b[:len(b)-1], true, nil
	}
}
