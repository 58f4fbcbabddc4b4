package sessiontest

import (
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// DurableTurn returns the log of a durable turn suspended in its first
// step (call c1 answered, c2 not started) and, separately, the events of
// the run that resumes it and finishes the turn.
func DurableTurn(id session.ID) (suspended, resumed []session.Event) {
	l := NewLog(id).StartTurn("go")
	l.Add(&session.TurnPin{Provider: "anthropic", Model: "claude", Tools: []string{"echo"}, ToolsHash: "h2", Version: "example.com/app@v1.2.3"})
	l.OpenStep("", "c1", "c2").Result("c1", "one")
	l.Add(&session.TurnSuspend{Step: 1, Pending: []llm.CallID{"c2"}, Reason: "shutdown"})
	n := len(l.Events)
	l.Run = "run-2"
	l.Add(&session.TurnResume{Step: 1, After: int64(n), Suspended: true, Started: []llm.CallID{"c2"}})
	l.Result("c2", "two")
	l.Add(&session.StepEnd{Step: 1, Finish: llm.FinishToolCalls})
	l.Step("done")
	l.EndTurn()
	return l.Events[:n], l.Events[n:]
}

// testDurableTurn: a turn suspended by its writer stays open across a
// clean reopen (no repair is appended), every durable-turn record reads
// back as written, and the resumed run's events close it.
func testDurableTurn(t *testing.T, st session.Store, reopen func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "durable"})
	suspended, resumed := DurableTurn(id)
	mustAppend(t, st, id, suspended...)
	st = reopen()
	if diff := DiffEvents(suspended, mustRead(t, st, id, 0)); diff != "" {
		t.Fatalf("a suspended turn after a clean reopen (-want +got):\n%s", diff)
	}
	mustAppend(t, st, id, resumed...)
	got := mustRead(t, st, id, 0)
	if diff := DiffEvents(append(suspended, resumed...), got); diff != "" {
		t.Errorf("the resumed turn (-want +got):\n%s", diff)
	}
	if err := session.Balanced(got); err != nil {
		t.Errorf("the resumed turn is not balanced: %v", err)
	}
}
