package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// A process that died while a subagent ran left two turns open, its own
// and the subagent's, each in its own lane: opening the session closes
// both, the subagent's first.
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
		l.Events = append(l.Events, e)
	}
	if err := st.Append(ctx, id, l.Events...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = open(t, path, nil)
	defer st.Close()
	// Leave the lock of a process that is gone, as a crash does.
	host, _ := os.Hostname()
	if _, err := st.DB().Exec(`INSERT INTO locks (session, owner, pid, host, started, since) VALUES (?, 'dead', 4194000, ?, 1, 0)`, string(id), host); err != nil {
		t.Fatal(err)
	}
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
