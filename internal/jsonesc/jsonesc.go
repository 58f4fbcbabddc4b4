// Package jsonesc writes and reads JSON strings as encoding/json does,
// for the direct encoders and decoders of the stores and the provider
// adapters. The writers (AppendString, AppendRaw) produce exactly the
// bytes json.Marshal produces, so what they write can stand in for it on
// disk and on the wire; the reader (Decode) decodes an escape strictly,
// leaving anything encoding/json would treat otherwise to encoding/json.
package jsonesc

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Decode decodes the escape b starts with (b[0] is a backslash): the
// rune it stands for and the bytes it takes, two for \n and its kind,
// six for \uXXXX, twelve for a surrogate pair. ok is false where
// encoding/json would not decode it to exactly that rune: a malformed
// escape, or a surrogate without its pair (which encoding/json replaces
// by U+FFFD).
func Decode(b []byte) (r rune, n int, ok bool) {
	if len(b) < 2 || b[0] != '\\' {
		return 0, 0, false
	}
	switch c := b[1]; c {
	case '"', '\\', '/':
		return rune(c), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
	default:
		return 0, 0, false
	}
	r1, ok := hex4(b[2:])
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6, true
	}
	if len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
		return 0, 0, false
	}
	r2, ok := hex4(b[8:])
	if r := utf16.DecodeRune(r1, r2); ok && r != utf8.RuneError {
		return r, 12, true
	}
	return 0, 0, false
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
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
