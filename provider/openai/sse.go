package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseReader splits a text/event-stream body into events. It is written for
// the hot path: one reusable buffer, no allocation per line once the buffer
// has grown to the longest event, and tolerance for what servers actually
// send (CRLF or LF line ends, comments, a missing blank line before EOF,
// several data lines per event).
type sseReader struct {
	r     *bufio.Reader
	event []byte // the event name of the pending event
	data  []byte // the data lines of the pending event, joined by '\n'
	has   bool   // a data line has been seen for the pending event
	long  []byte // scratch for lines longer than the bufio buffer
}

// maxEventSize bounds one event so that a server that never ends a line
// cannot make the reader grow without limit.
const maxEventSize = 16 << 20

var errEventTooLarge = errors.New("server-sent event larger than 16 MiB")

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 8<<10)}
}

// next returns the next event's name and data. The slices are valid until
// the following call. At the end of the body it returns io.EOF, after
// dispatching a final event that lacked its blank line.
func (s *sseReader) next() (event, data []byte, err error) {
	s.event = s.event[:0]
	s.data = s.data[:0]
	s.has = false
	for {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && (s.has || len(line) > 0) {
				if len(line) > 0 {
					s.field(line)
				}
				if s.has {
					return s.event, s.data, nil
				}
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if s.has {
				return s.event, s.data, nil
			}
			s.event = s.event[:0] // an event with no data is not dispatched
			continue
		}
		s.field(line)
		if len(s.data) > maxEventSize {
			return nil, nil, errEventTooLarge
		}
	}
}

// field folds one non-empty line into the pending event.
func (s *sseReader) field(line []byte) {
	if line[0] == ':' {
		return // comment, e.g. ": OPENROUTER PROCESSING"
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if s.has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.has = true
	case "event":
		s.event = append(s.event[:0], value...)
	}
}

// line returns the next line without its line end. At EOF it returns the
// unterminated remainder with io.EOF.
func (s *sseReader) line() ([]byte, error) {
	b, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxEventSize {
				return nil, errEventTooLarge
			}
			b, err = s.r.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return b, err
}
