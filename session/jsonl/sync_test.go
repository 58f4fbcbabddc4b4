package jsonl

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// appendSteps appends the events of l one by one with AppendAsync.
func appendSteps(t *testing.T, st *Store, l *sessiontest.Log) {
	t.Helper()
	for _, e := range l.Events {
		if err := st.AppendAsync(context.Background(), l.Session, e); err != nil {
			t.Fatalf("AppendAsync seq %d: %v", e.Seq, err)
		}
	}
}

// openTest opens a store in a new directory with session "s" created.
func openTest(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Create(context.Background(), &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestAppendAsyncSyncsInBackground(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	l := sessiontest.NewLog("s").FullTurn("one", "c1").StartTurn("two")
	appendSteps(t, st, l)
	if err := st.Sync(ctx, "s"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	ss, _ := st.get("s")
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !ss.sync.Idle() {
		t.Error("a background sync is still running after Close")
	}
}

func TestAppendAsyncReportsFailedSync(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	l := sessiontest.NewLog("s").StartTurn("one")
	appendSteps(t, st, l)
	// A pipe takes writes but cannot be synced (fsync is EINVAL).
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ss, _ := st.get("s")
	ss.mu.Lock()
	file := ss.f
	ss.f = w
	ss.mu.Unlock()
	defer file.Close()
	l.Step("done").EndTurn()
	if err := st.AppendAsync(ctx, "s", l.Events[2:]...); err != nil {
		t.Fatalf("AppendAsync: %v (the write succeeds; the sync fails later)", err)
	}
	checks := []struct {
		op  string
		err error
	}{
		{"Sync", st.Sync(ctx, "s")},
		{"second Sync", st.Sync(ctx, "s")},
		{"Append", st.Append(ctx, "s", sessiontest.NewLog("s").FullTurn("one").FullTurn("two").Events[len(l.Events):]...)},
		{"Close", st.Close()},
	}
	for _, c := range checks {
		if c.err == nil || !strings.Contains(c.err.Error(), "sync") || !strings.Contains(c.err.Error(), "reopen the store") {
			t.Errorf("%s after a failed background sync: err = %v, want the sync error with a hint", c.op, c.err)
		}
	}
	if err := st.Sync(ctx, "s"); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Sync after Close: err = %v, want ErrClosed", err)
	}
}
