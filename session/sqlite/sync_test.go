package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Create(context.Background(), &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestAppendAsyncSyncsTheLog(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	if st.wal == "" {
		t.Fatal("the database is not in WAL mode")
	}
	l := sessiontest.NewLog("s").FullTurn("one", "c1").FullTurn("two")
	for _, e := range l.Events {
		if err := st.AppendAsync(ctx, "s", e); err != nil {
			t.Fatalf("AppendAsync seq %d: %v", e.Seq, err)
		}
	}
	if _, err := os.Stat(st.wal); err != nil {
		t.Fatalf("write-ahead log: %v", err)
	}
	if err := st.Sync(ctx, "s"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !st.bg.Idle() {
		t.Error("a background sync is still running after Close")
	}
}

func TestAppendAsyncReportsFailedSync(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	l := sessiontest.NewLog("s").FullTurn("one")
	// Open the session (its lock row is synced in the background too),
	// and wait for the log's sync.
	if err := st.Append(ctx, "s", l.Events[0]); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	breakWAL(t, st)
	if err := st.AppendAsync(ctx, "s", l.Events[1:]...); err != nil {
		t.Fatalf("AppendAsync: %v (the commit succeeds; the sync fails later)", err)
	}
	next := sessiontest.NewLog("s").FullTurn("one").FullTurn("two").Events[len(l.Events):]
	checks := []struct {
		op  string
		err error
	}{
		{"Sync", st.Sync(ctx, "s")},
		{"second Sync", st.Sync(ctx, "s")},
		{"Append", st.Append(ctx, "s", next...)},
		{"Close", st.Close()},
	}
	for _, c := range checks {
		if c.err == nil || !strings.Contains(c.err.Error(), "sync /proc/self/stat") || !strings.Contains(c.err.Error(), "reopen the store") {
			t.Errorf("%s after a failed background sync: err = %v, want the sync error with a hint", c.op, c.err)
		}
	}
}

// The repair an open makes is synced before the open returns: a failed
// sync of it is the open's error, not a later call's.
func TestRepairIsSyncedBeforeItIsRead(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	l := sessiontest.NewLog("s").FullTurn("one").StartTurn("two")
	if err := st.Append(ctx, "s", l.Events...); err != nil {
		t.Fatal(err)
	}
	path := st.path
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Leave the lock of a process that died while appending.
	host, _ := os.Hostname()
	if _, err := st.db.Exec(`INSERT INTO locks (session, owner, pid, host, started, since) VALUES ('s', 'dead', 4194000, ?, 1, 0)`, host); err != nil {
		t.Fatal(err)
	}
	breakWAL(t, st)
	if _, err := st.Info(ctx, "s"); err == nil || !strings.Contains(err.Error(), "reopen the store") {
		t.Fatalf("Info after a repair whose sync failed: %v, want the sync's error", err)
	}
}

// Create and Delete return once their commit is synced, and a failed
// sync is their error.
func TestCreateAndDeleteWaitForTheirSync(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	breakWAL(t, st)
	if err := st.Delete(ctx, "s"); err == nil || !strings.Contains(err.Error(), "sync /proc/self/stat") {
		t.Errorf("Delete with a log that cannot be synced: %v, want the sync's error", err)
	}
	st = openTest(t)
	breakWAL(t, st)
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "t"}); err == nil || !strings.Contains(err.Error(), "sync /proc/self/stat") {
		t.Errorf("Create with a log that cannot be synced: %v, want the sync's error", err)
	}
}

// breakWAL makes the syncs of st's log fail: they sync a file of
// /proc, which cannot be synced (fsync is EINVAL). No sync may be running.
func breakWAL(t *testing.T, st *Store) {
	t.Helper()
	if st.walf != nil {
		st.walf.Close()
		st.walf = nil
	}
	st.wal = "/proc/self/stat"
}
