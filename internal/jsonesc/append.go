package jsonesc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// safe marks the ASCII bytes a string holds as they are: not a control
// character, quote or backslash, and not <, > or &, which encoding/json
// escapes so that its output can sit inside HTML.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := byte(' '); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string, escaped as json.Marshal
// escapes it by default: quotes, backslashes and control characters;
// <, > and & as \u escapes; U+2028 and U+2029; invalid UTF-8 as U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendRaw appends raw, which must be valid JSON (json.Valid), as
// json.Marshal writes a json.RawMessage: without the whitespace between
// tokens, with <, > and & as \u escapes and U+2028 and U+2029 escaped.
// Everything else, invalid UTF-8 inside strings included, is copied as
// it is. What it appends for invalid JSON is unspecified.
func AppendRaw(dst, raw []byte) []byte {
	start := 0
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case escaped: // the byte after a backslash is ASCII and kept
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, raw[start:i]...)
			start = i + 1
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			start = i + 1
		case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xa8:
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xf])
			i += 2
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}
