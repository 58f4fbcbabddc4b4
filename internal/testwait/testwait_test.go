package testwait_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/reinhq/rein/internal/testwait"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := 0
		if !testwait.For(time.Second, func() bool { n++; return n == 3 }) {
			t.Fatal("For gave up on a condition that came to hold")
		}
		if got, want := time.Since(start), 2*testwait.Tick; got != want {
			t.Errorf("For took %v, want %v (two ticks)", got, want)
		}
	})
}

func TestForGivesUpAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if testwait.For(100*time.Millisecond, func() bool { return false }) {
			t.Fatal("For reported a condition that never held")
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("For gave up after %v, want 100ms", got)
		}
	})
}
