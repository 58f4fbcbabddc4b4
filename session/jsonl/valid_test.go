package jsonl

import (
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"d"}`, ` [ 1 , -0.5e+3 , true , false , null ] `,
	`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1}}`, `[[]`, `"\u00e9\ud83d"`, `"\u00zz"`,
	`"tab	in"`, `"esc \q"`, "\"bad \xff utf-8\"", `01`, `-`, `1.`, `1e`, `.5`, `+1`, `tru`, `nulll`, `"`, `"\`,
	`{"seq":1,"time":"2026-03-14T15:09:26Z","type":"x","data":{"parts":[{"type":"text","text":"line\nline"}]}}`,
	strings.Repeat("[", 70) + strings.Repeat("]", 70), strings.Repeat("[", 70) + strings.Repeat("]", 69),
	strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64),
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range validSeeds {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}
