package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

// A process that died while a subagent ran left two turns open, its own
// and the subagent's, each in its own lane: opening the session closes
// both, the subagent's first. The subagent's name holds a unit
// separator, so the repair reads its rows again column by column.
func TestRepairClosesEveryOpenLane(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, id := openSessionAt(t, path, "s")
	// A finished turn, then one whose tool call runs a subagent.
	l := sessiontest.NewLog(id).FullTurn("first").StartTurn("delegate").OpenStep("asking a helper", "c1").Started("c1")
	child := sessiontest.NewLog(id)
	child.Run = "run-child"
	child.StartTurn("help").OpenStep("working")
	for _, e := range child.Events {
		e.Seq = int64(len(l.Events) + 1)
		e.ParentRun = l.Run
		e.Agent = "help\x1fer"
		l.Events = append(l.Events, e)
	}
	st = crashed(t, st, path, id, l.Events)
	got, err := sessiontest.ReadAll(ctx, st, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Balanced(got); err != nil {
		t.Fatalf("after the crash: %v", err)
	}
	var ends []session.RunID
	for _, e := range got[len(l.Events):] {
		if _, ok := e.Data.(*session.TurnEnd); ok {
			ends = append(ends, e.Run)
		}
	}
	if len(ends) != 2 || ends[0] != "run-child" || ends[1] != l.Run {
		t.Errorf("repair closed the turns of runs %v, want [run-child %s]", ends, l.Run)
	}
}

// The first Append after a crash repairs what the dead process left open
// before it writes: a batch that does not follow the repair is refused
// with session.ErrSeqConflict, the repair stays, and the Store holds the
// lock from then on.
func TestFirstAppendRepairsFirst(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, id := openSessionAt(t, path, "s")
	l := sessiontest.NewLog(id).FullTurn("first").StartTurn("second").OpenStep("working", "c1").Started("c1")
	st = crashed(t, st, path, id, l.Events)
	next := sessiontest.NewLog(id).FullTurn("first").StartTurn("second").OpenStep("working", "c1").Started("c1").FullTurn("third").Events[len(l.Events):]
	if err := st.Append(ctx, id, next...); !errors.Is(err, session.ErrSeqConflict) {
		t.Fatalf("Append after the repair's seqs: %v, want ErrSeqConflict", err)
	}
	got, err := sessiontest.ReadAll(ctx, st, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) <= len(l.Events) {
		t.Fatalf("the log holds %d events, want the repair after the %d written", len(got), len(l.Events))
	}
	if err := session.Balanced(got); err != nil {
		t.Fatalf("after the repair: %v", err)
	}
	other := open(t, path, nil)
	defer other.Close()
	if err := other.Append(ctx, id, next...); !errors.Is(err, session.ErrLocked) {
		t.Errorf("another Store's Append: %v, want ErrLocked (the first Append took the lock)", err)
	}
	last := got[len(got)-1].Seq
	for i := range next {
		next[i].Seq = last + 1 + int64(i)
	}
	if err := st.Append(ctx, id, next...); err != nil {
		t.Fatalf("Append after the repair: %v", err)
	}
}

// crashed appends events to session id of st, the store at path, closes
// it, and returns the store opened again with the lock row a process
// that died while appending leaves; it is closed when the test ends.
func crashed(t *testing.T, st *sqlite.Store, path string, id session.ID, events []session.Event) *sqlite.Store {
	t.Helper()
	if err := st.Append(context.Background(), id, events...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = open(t, path, nil)
	t.Cleanup(func() { st.Close() })
	host, _ := os.Hostname()
	if _, err := st.DB().Exec(`INSERT INTO locks (session, owner, pid, host, started, since) VALUES (?, 'dead', 4194000, ?, 1, 0)`, string(id), host); err != nil {
		t.Fatal(err)
	}
	return st
}
