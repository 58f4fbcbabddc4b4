package anthropic

import (
	"encoding/json"
	"math"
	"testing"
)

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
