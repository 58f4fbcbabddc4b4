package anthropic

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/reinhq/rein/internal/jsonesc"
	"github.com/reinhq/rein/llm"
)

// scan is a strict, minimal JSON reader over b.
type scan struct {
	b     []byte
	i     int
	names *names // may be nil
	tmp   *[]byte
}

func (s *scan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// isNull reads a null if one is next.
func (s *scan) isNull() bool {
	s.space()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object reads an object, or a null, which leaves a struct as it is.
// field is called at each key with the scanner at the key's value, and
// reports whether it read the value.
func (s *scan) object(field func(key []byte) bool) bool {
	if s.isNull() {
		return true
	}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	for first := true; ; first = false {
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		if s.b[s.i] == '}' {
			s.i++
			return true
		}
		if !first {
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
			s.space()
		}
		raw, ok := s.rawString()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !field(raw) {
			return false
		}
	}
}

// ignore skips the value of a key the struct has no field for. encoding/json
// matches keys case-insensitively (with Unicode folding), so only a plain
// lower-case key is surely not a field's.
func (s *scan) ignore(key []byte) bool {
	for _, c := range key {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return s.skipValue(0)
}

// str reads a string, or a null, which leaves dst as it is. A value equal
// to one of known is that string, not a copy.
func (s *scan) str(dst *string, known []string) bool { return s.strOf(dst, known, "", nil) }

// strOf is str that also reuses one (unless empty) and the names of tools.
func (s *scan) strOf(dst *string, known []string, one string, tools []llm.ToolSpec) bool {
	if s.isNull() {
		return true
	}
	start := s.i
	if raw, ok := s.rawString(); ok {
		*dst = reuse(raw, known, one, tools)
		return true
	}
	s.i = start
	end, ok := s.stringEnd()
	if !ok {
		return false
	}
	v, ok := unquote(s.b[start+1:end-1], s.tmp)
	if !ok {
		return false
	}
	*dst, s.i = v, end
	return true
}

// reuse returns raw as a string: one of the given strings if it equals
// one, else a copy.
func reuse(raw []byte, known []string, one string, tools []llm.ToolSpec) string {
	if one != "" && string(raw) == one {
		return one
	}
	for _, k := range known {
		if string(raw) == k {
			return k
		}
	}
	for i := range tools {
		if string(raw) == tools[i].Name {
			return tools[i].Name
		}
	}
	return string(raw)
}

// int reads an integer, or a null, which leaves dst as it is.
func (s *scan) int(dst *int64) bool {
	if s.isNull() {
		return true
	}
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.i-digits > 18 || (s.b[digits] == '0' && s.i-digits > 1) {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	*dst = n
	return err == nil
}

// rawString returns the bytes of a string without escapes; ok is false
// for escapes, control characters or invalid UTF-8.
func (s *scan) rawString() ([]byte, bool) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	ascii := true
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			v := s.b[start:j]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// unquote decodes the inside of a string with escapes, using tmp as its
// buffer. It reports false where encoding/json would substitute U+FFFD
// (invalid UTF-8, a lone surrogate), which the slow path then does.
func unquote(in []byte, tmp *[]byte) (string, bool) {
	out := (*tmp)[:0]
	defer func() { *tmp = out[:0] }()
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c < 0x20 {
			return "", false
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		r, n, ok := jsonesc.Decode(in[i:])
		if !ok {
			return "", false
		}
		out = utf8.AppendRune(out, r)
		i += n - 1
	}
	if !utf8.Valid(out) {
		return "", false
	}
	return string(out), true
}

// stringEnd returns the index after the string starting at s.i.
func (s *scan) stringEnd() (int, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return 0, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '\\':
			j++
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// skipValue skips one JSON value strictly; depth bounds nesting.
func (s *scan) skipValue(depth int) bool {
	if depth > 32 {
		return false
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		end, ok := s.stringEnd()
		if !ok || !json.Valid(s.b[s.i:end]) {
			return false
		}
		s.i = end
		return true
	case c == '{':
		// Keys with escapes are refused, which only sends the event to
		// the slow path.
		return s.object(func([]byte) bool { return s.skipValue(depth + 1) })
	case c == '[':
		s.i++
		for first := true; ; first = false {
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				return true
			}
			if !first {
				if s.i >= len(s.b) || s.b[s.i] != ',' {
					return false
				}
				s.i++
			}
			if !s.skipValue(depth + 1) {
				return false
			}
		}
	default:
		// A number or a literal: take the token and let encoding/json
		// judge it (cheap: no reflection, no allocation for these).
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return json.Valid(s.b[start:s.i])
			}
			s.i++
		}
		return json.Valid(s.b[start:s.i])
	}
}
