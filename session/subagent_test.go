package session_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func TestSubagentPayloadsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []session.Payload{
		&session.SubagentQueued{CallID: "c1", Name: "a", Running: 4},
		&session.SubagentStart{ChildSession: "s2", ChildRun: "r2", Name: "a", Depth: 1, Fork: true, ForkSeq: 7, CallID: "c1"},
		&session.SubagentEnd{ChildSession: "s2", ChildRun: "r2", Name: "a", Depth: 1, CallID: "c1", Reason: session.EndAborted,
			Cause: "user", Answer: "x", Steps: 2, Usage: llm.Usage{Input: 3}, Cost: 0.5,
			ByModel: map[string]session.SubagentUsage{"m": {Steps: 2, Usage: llm.Usage{Input: 3}, Cost: 0.5}}},
		&session.SubagentHandoff{ChildSession: "s2", Name: "a", Resources: []string{"shell"}},
	} {
		ev := session.Event{Seq: 1, Time: at, Session: "s", Turn: "t", Run: "r", ParentRun: "p", Data: p}
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
