package jsonesc

import (
	"encoding/json"
	"testing"
)

// stringCases holds what encoding/json escapes, one way or another.
var stringCases = []string{
	"", "plain", "\b\f\x01\x1f\x7f<>&\u2028\u2029\xff\xe2\x80 \t\n\r\"\\/",
	"é日本\U0001F600", "a\xc3", "\xed\xa0\x80", "\xe2\x80\xa8x\xe2\x80\xa9", "\xe2\x80",
}

// rawCases holds valid JSON values encoding/json rewrites, and some it keeps.
var rawCases = []string{
	`{}`, `null`, `"x"`, `1.5e3`, `{"a":[1,{"b":null}]}`,
	" { \"a\" : \"<&\u2028\" , \"n\": 1.50e3,\n \"b\":[1, 2.0, true, null] } ",
	"\t[ \"a b\\\" c\" ,\"\\\\\" , \"\\u003c\" ]\r\n",
	`"\"<\\"`, "\"\xff\xe2\x80\xa9 \"", `{"k":"a\"b","<":">"}`,
}

func TestAppendString(t *testing.T) {
	for _, s := range stringCases {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
}

func TestAppendRaw(t *testing.T) {
	for _, raw := range rawCases {
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := AppendRaw([]byte("x"), []byte(raw)); string(got) != "x"+string(want) {
			t.Errorf("AppendRaw(%q) = %s, want x%s", raw, got, want)
		}
	}
}

// FuzzAppendString checks AppendString against json.Marshal.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzAppendRaw checks AppendRaw against json.Marshal of a
// json.RawMessage, for every valid value.
func FuzzAppendRaw(f *testing.F) {
	for _, raw := range rawCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := AppendRaw(nil, raw); string(got) != string(want) {
			t.Fatalf("AppendRaw(%q) = %s, want %s", raw, got, want)
		}
	})
}
