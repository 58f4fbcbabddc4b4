package cputime_test

import (
	"crypto/sha256"
	"runtime"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/cputime"
)

// Spinning for 50ms on the clock shows in Process as CPU time of that
// order: at least a millisecond however busy the machine, at most what
// every CPU could have done in the time.
func TestProcessCountsWork(t *testing.T) {
	w0, c0 := time.Now(), cputime.Process()
	if c0 <= 0 {
		t.Fatalf("Process() = %v in a running test binary, want > 0", c0)
	}
	sum := sha256.Sum256(nil)
	for time.Since(w0) < 50*time.Millisecond {
		for range 100 {
			sum = sha256.Sum256(sum[:])
		}
	}
	wall, d := time.Since(w0), cputime.Process()-c0
	if most := wall*time.Duration(runtime.NumCPU()) + 20*time.Millisecond; d < time.Millisecond || d > most {
		t.Fatalf("spinning for %v read as %v of CPU, want between 1ms and %v", wall, d, most)
	}
}
