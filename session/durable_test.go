package session_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

func TestDurablePayloadsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []session.Payload{
		&session.TurnPin{Provider: "anthropic", Model: "claude", Tools: []string{"read", "shell"}, ToolsHash: "ab12", Version: "example.com/app@v1"},
		&session.TurnSuspend{Step: 2, Pending: []llm.CallID{"c2", "c3"}, Reason: "shutdown"},
		&session.TurnResume{Step: 2, After: 41, Suspended: true, Continues: "turn-3", Rerun: []llm.CallID{"c1"}, Interrupted: []llm.CallID{"c2"}, Started: []llm.CallID{"c3"}},
	} {
		ev := session.Event{Seq: 1, Time: at, Session: "s", Turn: "t", Run: "r", Data: p}
		b, err := session.AppendEventJSON(nil, ev)
		if err != nil {
			t.Fatalf("encode %s: %v", p.EventType(), err)
		}
		got, err := session.DecodeEvent(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if d := cmp.Diff(ev, got); d != "" {
			t.Errorf("%s round trip (-want +got):\n%s", p.EventType(), d)
		}
		if d := cmp.Diff(ev, ev.Clone()); d != "" {
			t.Errorf("%s clone (-want +got):\n%s", p.EventType(), d)
		}
	}
}

// TestDurableTurnRepairs: a suspended turn left open is closed like any
// open turn by RepairEvents, and the resumed log is balanced.
func TestDurableTurnRepairs(t *testing.T) {
	suspended, resumed := sessiontest.DurableTurn("s")
	if err := session.Balanced(append(suspended, resumed...)); err != nil {
		t.Fatalf("resumed log: %v", err)
	}
	fix := session.RepairEvents(suspended, time.Now())
	if err := session.Balanced(append(suspended, fix...)); err != nil {
		t.Fatalf("repaired suspended log: %v", err)
	}
	if r, ok := fix[0].Data.(*session.ToolResult); !ok || r.CallID != "c2" || r.Code != session.CodeNotStarted {
		t.Errorf("first repair = %#v, want c2 not started", fix[0].Data)
	}
}
