package opened

import (
	"errors"
	"testing"

	"github.com/reinhq/rein/session"
)

type state struct{ n int }

// A state is made once per session, kept until forgotten, and the
// registry refuses new work after Close, which hands the states over once.
func TestSessions(t *testing.T) {
	var o Sessions[state]
	made := 0
	newState := func() *state { made++; return &state{n: made} }
	a, err := o.Get("a", newState)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := o.Get("a", newState); again != a || made != 1 {
		t.Errorf("second Get made a new state (made %d)", made)
	}
	if o.Peek("b") != nil {
		t.Error("Peek made a state")
	}
	b, _ := o.Get("b", newState)
	o.Forget("b", &state{})
	if o.Peek("b") != b {
		t.Error("Forget of another state dropped b's")
	}
	o.Forget("b", b)
	if o.Peek("b") != nil {
		t.Error("Forget kept b's state")
	}
	if o.Closed() {
		t.Error("Closed before Close")
	}
	states, first := o.Close()
	if !first || len(states) != 1 || states["a"] != a {
		t.Errorf("Close = %v, %v; want a's state, true", states, first)
	}
	if states, first := o.Close(); first || states != nil {
		t.Errorf("second Close = %v, %v; want nil, false", states, first)
	}
	if _, err := o.Get("a", newState); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Get after Close: %v, want session.ErrClosed", err)
	}
	if !o.Closed() {
		t.Error("not Closed after Close")
	}
}
