package anthropic

import (
	"encoding/json"
	"math"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "\b\f\x01\x1f\x7f<>&\u2028\u2029\xff\xe2\x80 \t\n\r\"\\/", "é日本\U0001F600", "a\xc3", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendRawMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{`{}`, " { \"a\" : \"<&\u2028\" , \"n\": 1.50e3,\n \"b\":[1, 2.0, true, null] } "} {
		want, _ := json.Marshal(json.RawMessage(raw))
		if got := appendRaw(nil, []byte(raw)); string(got) != string(want) {
			t.Errorf("appendRaw(%q) = %s, want %s", raw, got, want)
		}
	}
}

func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.2, 1e-7, 1e21, 123456789.125, 1e20, -3e-9, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, _ := json.Marshal(f)
		got, err := appendFloat(nil, f)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	if _, err := appendFloat(nil, math.NaN()); err == nil {
		t.Error("appendFloat(NaN) did not fail")
	}
}
