package session

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// reader walks compact JSON as this package writes it.
type reader struct {
	b    []byte
	i    int
	last int // where the last string read began (its opening quote)
}

func (r *reader) lit(s string) bool {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
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

// object reads an object, calling field with each key (which holds no
// escape) and r at its value; field reads the value or returns false.
func (r *reader) object(field func(key []byte) bool) bool {
	if !r.char('{') {
		return false
	}
	if r.char('}') {
		return true
	}
	return r.fields(field)
}

// fields reads the fields of an object from the first key on, and the
// closing brace.
func (r *reader) fields(field func(key []byte) bool) bool {
	for {
		if !r.char('"') {
			return false
		}
		end := bytes.IndexByte(r.b[r.i:], '"')
		if end < 0 {
			return false
		}
		key := r.b[r.i : r.i+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		r.i += end + 1
		if !r.char(':') || !field(key) {
			return false
		}
		if !r.char(',') {
			return r.char('}')
		}
	}
}

// array reads an array, calling elem with r at each element.
func (r *reader) array(elem func() bool) bool {
	if !r.char('[') {
		return false
	}
	if r.char(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !r.char(',') {
			return r.char(']')
		}
	}
}

func (r *reader) boolTo(v *bool) bool {
	switch {
	case r.lit("true"):
		*v = true
	case r.lit("false"):
		*v = false
	default:
		return false
	}
	return true
}

// intTo reads a non-negative integer of up to 18 digits without leading
// zeros into v.
func intTo[T ~int | ~int64](r *reader, v *T) bool {
	n, ok := r.int()
	*v = T(n)
	return ok
}

func (r *reader) int() (int64, bool) {
	var n int64
	j := r.i
	for ; j < len(r.b) && j-r.i < 18 && r.b[j] >= '0' && r.b[j] <= '9'; j++ {
		n = n*10 + int64(r.b[j]-'0')
	}
	if j == r.i || (r.b[r.i] == '0' && j-r.i > 1) || (j < len(r.b) && (r.b[j] >= '0' && r.b[j] <= '9' || r.b[j] == '.' || r.b[j] == 'e' || r.b[j] == 'E')) {
		return 0, false
	}
	r.i = j
	return n, true
}

func (r *reader) strTo(v *string) bool {
	s, ok := r.str()
	*v = s
	return ok
}

// str reads a string, with its escapes.
func (r *reader) str() (string, bool) {
	b := r.b
	if r.i >= len(b) || b[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	var buf []byte // the string, once an escape is met
	from, ascii := start, true
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[start:j]
			if buf != nil {
				s = append(buf, b[from:j]...)
			}
			if !ascii && !utf8.Valid(s) {
				return "", false // encoding/json replaces invalid UTF-8; let it
			}
			r.last, r.i = start-1, j+1
			return string(s), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '\\':
			if buf == nil {
				buf = make([]byte, 0, len(b)-start)
			}
			buf = append(buf, b[from:j]...)
			n, ok := unescape(&buf, b[j:])
			if !ok {
				return "", false
			}
			j += n - 1
			from = j + 1
		}
	}
	return "", false
}

// unescape appends the character escape b starts with to buf and returns
// the escape's length.
func unescape(buf *[]byte, b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	if c := shortEscape(b[1]); c != 0 {
		*buf = append(*buf, c)
		return 2, true
	}
	r1, ok := hex4(b[1:])
	if !ok {
		return 0, false
	}
	if !utf16.IsSurrogate(r1) {
		*buf = utf8.AppendRune(*buf, r1)
		return 6, true
	}
	if len(b) < 12 || b[6] != '\\' {
		return 0, false
	}
	r2, ok := hex4(b[7:])
	if r := utf16.DecodeRune(r1, r2); ok && r != utf8.RuneError {
		*buf = utf8.AppendRune(*buf, r)
		return 12, true
	}
	return 0, false
}

// hex4 reads the rune of "uXXXX".
func hex4(b []byte) (rune, bool) {
	if len(b) < 5 || b[0] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[1:5] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// shortEscape returns the byte a JSON escape \c stands for, or 0 if c
// is not one of the two-byte escapes.
func shortEscape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	}
	return 0
}

// rawTo reads an object or an array, checked, into v as a copy.
func (r *reader) rawTo(v *json.RawMessage) bool {
	if r.i >= len(r.b) || (r.b[r.i] != '{' && r.b[r.i] != '[') {
		return false
	}
	n := valueLen(r.b[r.i:])
	raw := r.b[r.i : r.i+n]
	if !json.Valid(raw) {
		return false
	}
	*v = bytes.Clone(raw)
	r.i += n
	return true
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
