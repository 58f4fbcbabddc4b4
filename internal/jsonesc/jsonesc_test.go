package jsonesc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		in string
		r  rune
		n  int
		ok bool
	}{
		{`\n`, '\n', 2, true},
		{`\"x`, '"', 2, true},
		{`\/`, '/', 2, true},
		{`\u00e9`, 'é', 6, true},
		{`\u00E9`, 'é', 6, true},
		{`\ud83d\ude00`, '😀', 12, true},
		{`\ud83d`, 0, 0, false},       // a lone surrogate: encoding/json gives U+FFFD
		{`\ud83d\u0041`, 0, 0, false}, // not a pair
		{`\ude00\ud83d`, 0, 0, false}, // the wrong order
		{`\x`, 0, 0, false},
		{`\u12`, 0, 0, false},
		{`\u12g4`, 0, 0, false},
		{`n`, 0, 0, false},
	}
	for _, tt := range tests {
		r, n, ok := Decode([]byte(tt.in))
		if r != tt.r || n != tt.n || ok != tt.ok {
			t.Errorf("Decode(%s) = %q, %d, %v; want %q, %d, %v", tt.in, r, n, ok, tt.r, tt.n, tt.ok)
		}
	}
}

// FuzzDecode checks that what Decode takes, encoding/json decodes to the
// same rune.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`\n`, `\u0041`, `\ud83d\ude00`, `\ud83d`, `\uDFFF\uD800`, `\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, n, ok := Decode([]byte(s))
		if !ok {
			return
		}
		var got string
		if err := json.Unmarshal([]byte(`"`+s[:n]+`"`), &got); err != nil {
			t.Fatalf("Decode(%q) took %d bytes as %q; encoding/json: %v", s, n, r, err)
		}
		if want := string(r); got != want || !utf8.ValidString(got) {
			t.Fatalf("Decode(%q) = %q; encoding/json = %q", s, want, got)
		}
	})
}
