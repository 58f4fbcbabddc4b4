package anthropic

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// fastDelta decodes a content_block_delta event, by far the most common
// event of a stream, and the small content_block_stop, message_stop and
// ping events, without encoding/json's reflection and with one allocation
// for a delta's text. It accepts only the plain shape the
// API sends and reports ok=false for anything else (other events, odd
// keys, escapes it does not handle, malformed JSON), so the caller falls
// back to encoding/json and the result is always the same as its.
func fastDelta(data []byte, ev *wireEvent) (ok bool) {
	s := scan{b: data}
	*ev = wireEvent{}
	if !s.objectStart() {
		return false
	}
	sawType := false
	for first := true; ; first = false {
		key, more, good := s.nextKey(first)
		if !good {
			return false
		}
		if !more {
			break
		}
		switch key {
		case keyType:
			v, good := s.rawString()
			if !good {
				return false
			}
			switch string(v) {
			case "content_block_delta":
				ev.Type = "content_block_delta"
			case "content_block_stop":
				ev.Type = "content_block_stop"
			case "message_stop":
				ev.Type = "message_stop"
			case "ping":
				ev.Type = "ping"
			default:
				return false
			}
			sawType = true
		case keyIndex:
			n, good := s.integer()
			if !good {
				return false
			}
			ev.Index = n
		case keyDelta:
			if !s.delta(ev) {
				return false
			}
		case keyIgnored:
			if !s.skipValue(0) {
				return false
			}
		default:
			return false
		}
	}
	s.space()
	return sawType && s.i == len(s.b)
}

func (s *scan) delta(ev *wireEvent) bool {
	if !s.objectStart() {
		return false
	}
	for first := true; ; first = false {
		key, more, good := s.nextKey(first)
		if !good {
			return false
		}
		if !more {
			return true
		}
		var dst *string
		switch key {
		case keyType:
			v, good := s.rawString()
			if !good {
				return false
			}
			switch string(v) {
			case "text_delta":
				ev.Delta.Type = "text_delta"
			case "thinking_delta":
				ev.Delta.Type = "thinking_delta"
			case "signature_delta":
				ev.Delta.Type = "signature_delta"
			case "input_json_delta":
				ev.Delta.Type = "input_json_delta"
			default:
				return false
			}
			continue
		case keyText:
			dst = &ev.Delta.Text
		case keyThinking:
			dst = &ev.Delta.Thinking
		case keySignature:
			dst = &ev.Delta.Signature
		case keyPartialJSON:
			dst = &ev.Delta.PartialJSON
		case keyIgnored:
			if !s.skipValue(0) {
				return false
			}
			continue
		default:
			return false
		}
		v, good := s.stringValue()
		if !good {
			return false
		}
		*dst = v
	}
}

// scan is a strict, minimal JSON reader over b.
type scan struct {
	b []byte
	i int
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

func (s *scan) objectStart() bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '{' {
		s.i++
		return true
	}
	return false
}

// key identifies an object key for the fast path.
type key int

const (
	keyBad     key = iota // cannot be handled: the slow path decides
	keyIgnored            // a key encoding/json would ignore too
	keyType
	keyIndex
	keyDelta
	keyText
	keyThinking
	keySignature
	keyPartialJSON
)

// nextKey reads past a comma (unless first) to the next key and its
// colon; more is false at the closing brace.
func (s *scan) nextKey(first bool) (k key, more, ok bool) {
	s.space()
	if s.i >= len(s.b) {
		return keyBad, false, false
	}
	if s.b[s.i] == '}' {
		s.i++
		return keyBad, false, true
	}
	if !first {
		if s.b[s.i] != ',' {
			return keyBad, false, false
		}
		s.i++
		s.space()
	}
	raw, ok := s.rawString()
	if !ok {
		return keyBad, false, false
	}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return keyBad, false, false
	}
	s.i++
	return keyOf(raw), true, true
}

// keyOf classifies a key. Keys that name a field of wireEvent elsewhere
// (message, usage, stop_reason…) are keyBad: encoding/json would decode
// them and could fail on their type. Since encoding/json matches keys
// case-insensitively, any key that is not plain lower case is keyBad.
func keyOf(raw []byte) key {
	switch string(raw) {
	case "type":
		return keyType
	case "index":
		return keyIndex
	case "delta":
		return keyDelta
	case "text":
		return keyText
	case "thinking":
		return keyThinking
	case "signature":
		return keySignature
	case "partial_json":
		return keyPartialJSON
	case "message", "content_block", "usage", "error", "stop_reason", "id", "model", "name", "data",
		"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation":
		return keyBad
	}
	for _, c := range raw {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return keyBad
		}
	}
	return keyIgnored
}

// rawString returns the bytes of a string without escapes; ok is false
// for escapes, control characters or invalid UTF-8 (the slow path
// handles those).
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

// stringValue returns a string value, unescaping through encoding/json
// when it has escapes.
func (s *scan) stringValue() (string, bool) {
	s.space()
	start := s.i
	if v, ok := s.rawString(); ok {
		return string(v), true
	}
	s.i = start
	end, ok := s.stringEnd()
	if !ok {
		return "", false
	}
	var out string
	if err := json.Unmarshal(s.b[start:end], &out); err != nil {
		return "", false
	}
	s.i = end
	return out, true
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

func (s *scan) integer() (int, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.i-digits > 9 || (s.b[digits] == '0' && s.i-digits > 1) {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	return n, err == nil
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
		s.i++
		for first := true; ; first = false {
			s.space()
			if s.i < len(s.b) && s.b[s.i] == '}' {
				s.i++
				return true
			}
			if !first {
				if s.i >= len(s.b) || s.b[s.i] != ',' {
					return false
				}
				s.i++
				s.space()
			}
			end, ok := s.stringEnd()
			if !ok || !json.Valid(s.b[s.i:end]) {
				return false
			}
			s.i = end
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			if !s.skipValue(depth + 1) {
				return false
			}
		}
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
