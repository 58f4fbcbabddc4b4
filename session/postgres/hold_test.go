package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sessiontest"
)

// Hold takes a session's lease before anything is appended, Held tells
// another Store so, and Release lets that one take it at once.
func TestHoldHeldRelease(t *testing.T) {
	u := schemaURL(t)
	a, b := open(t, u, nil), open(t, u, nil)
	ctx := context.Background()
	if _, err := a.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if l, err := b.Holder(ctx, "s"); err != nil || l != nil {
		t.Fatalf("Holder of a new session = %v, %v; want none", l, err)
	}
	if err := a.Hold(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if held, err := b.Held(ctx, "s"); err != nil || !held {
		t.Errorf("b.Held while a holds = %v, %v; want true", held, err)
	}
	if held, err := a.Held(ctx, "s"); err != nil || held {
		t.Errorf("a.Held of its own lease = %v, %v; want false (no other holder)", held, err)
	}
	if err := b.Hold(ctx, "s"); !errors.Is(err, session.ErrLocked) {
		t.Errorf("b.Hold while a holds: err = %v, want ErrLocked", err)
	}
	if err := a.Release(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	l := sessiontest.NewLog("s").FullTurn("hi")
	first := len(l.Events)
	l.FullTurn("again")
	if err := b.Append(ctx, "s", l.Events[:first]...); err != nil {
		t.Fatalf("b.Append after a released: %v", err)
	}
	// a takes it back once b releases, and appends after b's events.
	if err := b.Release(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "s", l.Events[first:]...); err != nil {
		t.Fatalf("a.Append after taking the lease back: %v", err)
	}
}

// With KeepOpenTurns, a takeover leaves the turn a dead holder left open
// as it was, for a durable resume; without, it is closed (TestB70).
func TestKeepOpenTurnsLeavesTurnOpen(t *testing.T) {
	u := schemaURL(t)
	a := open(t, u, nil)
	b := open(t, u, &postgres.Options{KeepOpenTurns: true})
	ctx := context.Background()
	l := handOver(t, a, "s", false, time.Hour)
	if err := b.Hold(ctx, "s"); err != nil {
		t.Fatalf("Hold of a dead holder's session: %v", err)
	}
	got, err := sessiontest.ReadAll(ctx, b, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(l.Events, got); diff != "" {
		t.Errorf("the takeover changed the open turn (-want +got):\n%s", diff)
	}
	if l, err := b.Holder(ctx, "s"); err != nil || l == nil || !l.Live {
		t.Errorf("lease after Hold = %+v, %v; want b's, live", l, err)
	}
}
