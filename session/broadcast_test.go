package session_test

import (
	"testing"

	"github.com/reinhq/rein/session"
)

// fired reports whether ch holds a signal, taking it.
func fired(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestBroadcaster(t *testing.T) {
	var b session.Broadcaster
	a1, stop1 := b.Subscribe("a")
	a2, stop2 := b.Subscribe("a")
	other, stopOther := b.Subscribe("b")
	defer stopOther()

	b.Notify("a")
	b.Notify("a") // a burst coalesces into the one buffered signal
	if !fired(a1) || !fired(a2) {
		t.Fatal("Notify(a) did not wake both subscribers of a")
	}
	if fired(a1) {
		t.Error("two Notify calls left two signals; want them coalesced into one")
	}
	if fired(other) {
		t.Error("Notify(a) woke a subscriber of b")
	}

	stop1()
	stop1() // idempotent
	b.Notify("a")
	if fired(a1) {
		t.Error("a cancelled subscription fired")
	}
	if !fired(a2) {
		t.Error("cancelling one subscription silenced another")
	}
	stop2()

	b.Close()
	b.Close()
	late, stopLate := b.Subscribe("b")
	defer stopLate()
	b.Notify("b")
	if fired(other) || fired(late) {
		t.Error("a channel fired after Close")
	}
}

func TestDurabilityString(t *testing.T) {
	for d, want := range map[session.Durability]string{
		session.DurabilityStep:   "step",
		session.DurabilityAlways: "always",
		session.DurabilityNever:  "never",
		session.Durability(9):    "Durability(9)",
	} {
		if got := d.String(); got != want {
			t.Errorf("Durability(%d).String() = %q, want %q", int(d), got, want)
		}
	}
	var zero session.Durability
	if zero != session.DurabilityStep {
		t.Error("the zero Durability is not DurabilityStep")
	}
}

func TestDurabilitySyncs(t *testing.T) {
	mid := []session.Event{{Data: &session.StepStart{Step: 1}}, {Data: &session.AssistantChunk{Step: 1}}}
	end := append(mid, session.Event{Data: &session.StepEnd{Step: 1}})
	turn := []session.Event{{Data: &session.TurnEnd{Reason: session.EndCompleted}}}
	for _, tc := range []struct {
		d          session.Durability
		mid, steps bool
	}{
		{session.DurabilityStep, false, true},
		{session.DurabilityAlways, true, true},
		{session.DurabilityNever, false, false},
	} {
		if got := tc.d.Syncs(mid); got != tc.mid {
			t.Errorf("%s: Syncs(mid-step batch) = %v, want %v", tc.d, got, tc.mid)
		}
		if got := tc.d.Syncs(end); got != tc.steps {
			t.Errorf("%s: Syncs(batch ending a step) = %v, want %v", tc.d, got, tc.steps)
		}
		if got := tc.d.Syncs(turn); got != tc.steps {
			t.Errorf("%s: Syncs(batch ending a turn) = %v, want %v", tc.d, got, tc.steps)
		}
	}
}
