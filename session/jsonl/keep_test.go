package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// The first read of a session, whose scan decodes the events it yields,
// yields what a later read of the same Store does, from any seq: whole
// turns, chunks packed on one line and the repair of a crash.
func TestFirstReadYieldsWhatLaterReadsDo(t *testing.T) {
	ctx := context.Background()
	events := sessiontest.Mix(3000)
	events = append(events, sessiontest.NewLog("s").StartTurn("open").Events...)
	for i := range events[3000:] {
		events[3000+i].Seq = int64(3001 + i)
	}
	dir, _ := setup(t, events)
	// The lock of a process that is gone: the first read repairs.
	lock := []byte(`{"pid":1,"host":"gone","since":"2026-01-01T00:00:00Z"}`)
	if err := os.WriteFile(filepath.Join(dir, "s.lock"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, after := range []int64{0, 1, 1234, 2999, 3000, int64(len(events)), int64(len(events)) + 5} {
		first := open(t, dir, nil)
		got, err := sessiontest.ReadAll(ctx, first, "s", after)
		if err != nil {
			t.Fatalf("first read after %d: %v", after, err)
		}
		again, err := sessiontest.ReadAll(ctx, first, "s", after)
		if err != nil {
			t.Fatalf("second read after %d: %v", after, err)
		}
		first.Close()
		if diff := cmp.Diff(again, got); diff != "" {
			t.Errorf("after %d: first read differs from the next (-next +first):\n%s", after, diff)
		}
		if n := int64(len(events)) + 1 - after; n > 0 && int64(len(got)) != n {
			t.Errorf("after %d: read %d events, want %d (with the turn.end of the repair)", after, len(got), n)
		}
	}
}

// A line that is valid JSON but not an event, before a committed
// turn.end, still ends the first read with an error naming it, after the
// events before it.
func TestFirstReadStopsAtACommittedBadEvent(t *testing.T) {
	ctx := context.Background()
	l := sessiontest.NewLog("s").FullTurn("one", "c1").FullTurn("two", "c2")
	dir, path := setup(t, l.Events)
	lines := readLines(t, path)
	lines[3] = bytes.Replace(lines[3], []byte(`"data":{`), []byte(`"data":{"step":"x",`), 1)
	writeLines(t, path, lines)
	st := open(t, dir, nil)
	defer st.Close()
	got, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("read: %v, want an error wrapping session.ErrCorrupt", err)
	}
	if len(got) != 2 {
		t.Errorf("read %d events before the bad line, want 2", len(got))
	}
}
