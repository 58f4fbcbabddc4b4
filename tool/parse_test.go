package tool

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stdDecode is what parseJSON must agree with.
func stdDecode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

var parseSeeds = []string{
	`{}`, `[]`, `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, `"x"`, `-0.5e+10`, `  {"a" : "b" }  `,
	`{"esc":"a\"b\\c\u00e9\n"}`, `{"bad":"\xff"}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `[1,]`, `{"a":1,}`,
	`{"a"}`, `tru`, `nul`, `"\u00"`, "\"tab\there\"", `{"a":1}{}`, `{"a":"é✓𝄞"}`, `[[[[]]]]`, `1e999`, `{"a":1,"a":2}`, "{\"bad\":\"\xff\"}", "\"\x01\"",
}

func TestParseJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range parseSeeds {
		checkParse(t, []byte(s))
	}
}

func checkParse(t *testing.T, b []byte) {
	t.Helper()
	want, werr := stdDecode(b)
	got, gerr := parseJSON(b)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("parseJSON(%q) error %v; encoding/json error %v", b, gerr, werr)
	}
	if werr == nil {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("parseJSON(%q) (-encoding/json +parseJSON):\n%s", b, diff)
		}
	}
}

// FuzzParseJSON checks parseJSON against encoding/json on any input.
func FuzzParseJSON(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkParse(t, []byte(s))
	})
}
