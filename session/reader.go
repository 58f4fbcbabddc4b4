package session

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/internal/jsonesc"
)

// reader walks compact JSON as this package writes it. A read that
// meets anything else sets bad, after which every read fails.
type reader struct {
	b      []byte
	i      int
	bad    bool
	key    []byte  // the key field read last
	last   int     // where the last string read began (its opening quote)
	recent *recent // strings to share with the events before, or nil
}

// recent holds the tool names and call IDs read last: a call's ID and
// name recur in the assistant message, the tool.call and the
// tool.result, and a few names recur all through a log.
type recent struct {
	s    [8]string
	next int
}

// shared reads a string as str does, and returns one of r.recent
// without allocating when it holds the same text.
func (r *reader) shared() string {
	if r.recent == nil || r.bad || r.i >= len(r.b) || r.b[r.i] != '"' {
		return r.str()
	}
	rest := r.b[r.i+1:]
	if end := bytes.IndexByte(rest, '"'); end > 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
		for _, s := range r.recent.s {
			if s == string(rest[:end]) {
				r.last = r.i
				r.i += end + 2
				return s
			}
		}
	}
	s := r.str()
	if !r.bad && s != "" {
		r.recent.s[r.recent.next] = s
		r.recent.next = (r.recent.next + 1) % len(r.recent.s)
	}
	return s
}

func (r *reader) fail() { r.bad = true }

func (r *reader) lit(s string) bool {
	if r.bad || len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

func (r *reader) char(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// field steps through an object, n counting its fields: past the
// opening brace on the first call, past the comma before each later key.
// It reads the key, which holds no escape, into r.key and reports whether
// there is one; at the closing brace, or at a failure, it reports false.
func (r *reader) field(n *int) bool {
	if !r.step(n, '{', '}') {
		return false
	}
	if !r.char('"') {
		r.fail()
		return false
	}
	end := bytes.IndexByte(r.b[r.i:], '"')
	if end < 0 || bytes.IndexByte(r.b[r.i:r.i+end], '\\') >= 0 {
		r.fail()
		return false
	}
	r.key = r.b[r.i : r.i+end]
	r.i += end + 1
	if !r.char(':') {
		r.fail()
		return false
	}
	return true
}

// elem steps through an array as field does through an object, and
// reports whether r is at an element.
func (r *reader) elem(n *int) bool { return r.step(n, '[', ']') }

func (r *reader) step(n *int, open, close byte) bool {
	switch {
	case r.bad:
		return false
	case *n == 0:
		if !r.char(open) {
			r.fail()
			return false
		}
		if r.char(close) {
			return false
		}
	case !r.char(','):
		if !r.char(close) {
			r.fail()
		}
		return false
	}
	*n++
	return true
}

func (r *reader) bool() bool {
	switch {
	case r.lit("true"):
		return true
	case r.lit("false"):
		return false
	}
	r.fail()
	return false
}

// int reads a non-negative integer of up to 18 digits without leading
// zeros.
func (r *reader) int() int64 {
	if r.bad {
		return 0
	}
	var n int64
	j := r.i
	for ; j < len(r.b) && j-r.i < 18 && r.b[j] >= '0' && r.b[j] <= '9'; j++ {
		n = n*10 + int64(r.b[j]-'0')
	}
	if j == r.i || (r.b[r.i] == '0' && j-r.i > 1) || (j < len(r.b) && (r.b[j] >= '0' && r.b[j] <= '9' || r.b[j] == '.' || r.b[j] == 'e' || r.b[j] == 'E')) {
		r.fail()
		return 0
	}
	r.i = j
	return n
}

// strAs reads a string as str does, and returns *prev without copying
// when the string's bytes are prev's. A string read with no escape
// becomes the next prev.
func (r *reader) strAs(prev *string) string {
	if p := *prev; !r.bad && len(r.b)-r.i >= len(p)+2 && r.b[r.i] == '"' && r.b[r.i+1+len(p)] == '"' && string(r.b[r.i+1:r.i+1+len(p)]) == p {
		r.last = r.i
		r.i += len(p) + 2
		return p
	}
	start := r.i
	s := r.str()
	if !r.bad && r.i-start == len(s)+2 {
		*prev = s // no escape: its bytes are its text
	}
	return s
}

// plain reads a string without escapes and returns it with its quotes,
// or nil.
func (r *reader) plain() []byte {
	if r.bad || r.i >= len(r.b) || r.b[r.i] != '"' {
		r.fail()
		return nil
	}
	end := bytes.IndexByte(r.b[r.i+1:], '"')
	if end < 0 || bytes.IndexByte(r.b[r.i+1:r.i+1+end], '\\') >= 0 {
		r.fail()
		return nil
	}
	q := r.b[r.i : r.i+end+2]
	r.last, r.i = r.i, r.i+end+2
	return q
}

// word reads a string as str does, without allocating when it is one
// of the common words.
func (r *reader) word() string {
	if !r.bad && r.i < len(r.b) && r.b[r.i] == '"' {
		rest := r.b[r.i+1:]
		if end := bytes.IndexByte(rest, '"'); end >= 0 {
			if s, ok := commonWord(rest[:end]); ok {
				r.last = r.i
				r.i += end + 2
				return s
			}
		}
	}
	return r.str()
}

// strClass sorts the bytes of a JSON string: 0 stands for itself, 1 is
// part of a non-ASCII character, 2 ends a run of plain bytes (the quote,
// the backslash, a control byte).
var strClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c < 0x20 || c == '"' || c == '\\':
			t[c] = 2
		case c >= utf8.RuneSelf:
			t[c] = 1
		}
	}
	return t
}()

// str reads a string, with its escapes.
func (r *reader) str() string {
	b := r.b
	if r.bad || r.i >= len(b) || b[r.i] != '"' {
		r.fail()
		return ""
	}
	start := r.i + 1
	j, high := start, uint8(0)
	for ; j < len(b) && strClass[b[j]] < 2; j++ {
		high |= strClass[b[j]]
	}
	switch {
	case j == len(b) || b[j] < 0x20:
		r.fail()
		return ""
	case b[j] == '\\':
		return r.escaped(start, j, high != 0)
	}
	if high != 0 && !utf8.Valid(b[start:j]) {
		r.fail() // encoding/json replaces invalid UTF-8; let it
		return ""
	}
	r.last, r.i = start-1, j+1
	return string(b[start:j])
}

// escaped reads the rest of the string str began at start once it met
// an escape at esc, into one buffer no longer than the string's bytes;
// high says whether a byte before esc was not ASCII.
func (r *reader) escaped(start, esc int, high bool) string {
	b := r.b
	end := closingQuote(b, esc)
	if end < 0 {
		r.fail()
		return ""
	}
	var sb strings.Builder
	sb.Grow(end - start) // the text is never longer than its escaped form
	sb.Write(b[start:esc])
	from, j := esc, esc
	for j < end {
		switch c := b[j]; {
		case c == '\\':
			sb.Write(b[from:j])
			c, n, ok := jsonesc.Decode(b[j:end])
			if !ok {
				r.fail()
				return ""
			}
			sb.WriteRune(c)
			j += n
			from = j
		case c < 0x20:
			r.fail()
			return ""
		default:
			high = high || c >= utf8.RuneSelf
			j++
		}
	}
	sb.Write(b[from:end])
	s := sb.String()
	if high && !utf8.ValidString(s) {
		r.fail() // encoding/json replaces invalid UTF-8; let it
		return ""
	}
	r.last, r.i = start-1, end+1
	return s
}

// closingQuote returns the index of the quote that ends the string b[i]
// is inside, or -1: the first quote after i not escaped by an odd run of
// backslashes.
func closingQuote(b []byte, i int) int {
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return -1
		}
		q := i + k
		n := 0
		for p := q - 1; p >= 0 && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// raw reads an object or an array, checked, as a copy.
func (r *reader) raw() json.RawMessage {
	if r.bad || r.i >= len(r.b) || (r.b[r.i] != '{' && r.b[r.i] != '[') {
		r.fail()
		return nil
	}
	n := valueLen(r.b[r.i:])
	raw := r.b[r.i : r.i+n]
	if !json.Valid(raw) {
		r.fail()
		return nil
	}
	r.i += n
	return bytes.Clone(raw)
}

// valueLen returns the length of the JSON value b starts with: an
// object, an array or a string, by its brackets and quotes. Unchecked
// bytes may give a wrong length; the caller checks what it cuts.
func valueLen(b []byte) int {
	depth, inStr := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
				if depth == 0 {
					return i + 1
				}
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return i
		}
	}
	return len(b)
}
