package sandbox

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// checkChars refuses characters that could make a name look like, or be
// normalised by some layer into, a path separator or a dot, and invisible
// or control characters. Names are refused rather than normalised: a
// normalised name would differ from what the kernel opens.
func checkChars(name string) error {
	if !utf8.ValidString(name) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range name {
		switch {
		case r == 0:
			return errors.New("contains a NUL byte")
		case r < 0x20 || r == 0x7f:
			return errors.New("contains a control character")
		case r < 0x80:
			continue
		case lookAlike(r):
			return fmt.Errorf("contains %U, which looks like a path separator or dot", r)
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			return fmt.Errorf("contains the invisible character %U", r)
		}
	}
	return nil
}

// lookAlike lists characters whose compatibility form, or whose glyph, is
// "/", "\\" or ".".
func lookAlike(r rune) bool {
	switch r {
	case '\uFF0F', // fullwidth solidus
		'\u2215',           // division slash
		'\u2044',           // fraction slash
		'\u29F8',           // big solidus
		'\u2571',           // box drawings diagonal
		'\uFF3C',           // fullwidth reverse solidus
		'\u2216',           // set minus
		'\u29F9',           // big reverse solidus
		'\uFE68',           // small reverse solidus
		'\uFF0E',           // fullwidth full stop
		'\uFE52',           // small full stop
		'\u2024',           // one dot leader
		'\u2025',           // two dot leader
		'\u2026',           // horizontal ellipsis
		'\u3002',           // ideographic full stop
		'\uFF61',           // halfwidth ideographic full stop
		'\u0701', '\u0702', // syriac full stops
		'\u00B7', '\u2027', '\u0387', // middle dots
		'\u2E33', '\uA4F8':
		return true
	}
	return false
}
