package session_test

import (
	"errors"
	"iter"
	"testing"

	"github.com/reinhq/rein/session"
)

func TestCollect(t *testing.T) {
	boom := errors.New("boom")
	events := func(n int, fail bool) iter.Seq2[session.Event, error] {
		return func(yield func(session.Event, error) bool) {
			for i := 1; i <= n; i++ {
				if !yield(session.Event{Seq: int64(i)}, nil) {
					return
				}
			}
			if fail {
				yield(session.Event{}, boom)
			}
		}
	}
	got, err := session.Collect(events(1000, false))
	if err != nil || len(got) != 1000 || got[999].Seq != 1000 {
		t.Fatalf("Collect = %d events, last %+v, %v; want 1000 in order", len(got), got[len(got)-1], err)
	}
	got, err = session.Collect(events(3, true))
	if !errors.Is(err, boom) || len(got) != 3 {
		t.Errorf("Collect of a failing read = %d events, %v; want the 3 before and the error", len(got), err)
	}
}
