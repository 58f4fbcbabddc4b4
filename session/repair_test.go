package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

var repairTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// summary renders events compactly: type, plus call id and code of results
// and the reason of turn ends.
func summary(events []session.Event) []string {
	var out []string
	for _, e := range events {
		s := e.Data.EventType()
		switch d := e.Data.(type) {
		case *session.ToolResult:
			s += " " + string(d.CallID) + " " + d.Code
		case *session.TurnEnd:
			s += " " + string(d.Reason)
		case *session.StepEnd:
			s += " " + string(d.Finish)
		}
		out = append(out, s)
	}
	return out
}

func TestB48_RepairOpenTail(t *testing.T) {
	tests := []struct {
		name  string
		build func(l *sessiontest.Log)
		want  []string
	}{
		{
			name:  "balanced log gets nothing",
			build: func(l *sessiontest.Log) { l.FullTurn("a", "c1") },
			want:  nil,
		},
		{
			name:  "empty log gets nothing",
			build: func(l *sessiontest.Log) {},
			want:  nil,
		},
		{
			name:  "prompt only",
			build: func(l *sessiontest.Log) { l.FullTurn("a").StartTurn("b") },
			want:  []string{"turn.end interrupted"},
		},
		{
			name: "step open before the response",
			build: func(l *sessiontest.Log) {
				l.StartTurn("b").Add(&session.StepStart{Step: 1})
			},
			want: []string{"step.end aborted", "turn.end interrupted"},
		},
		{
			name: "calls started, not started and answered",
			build: func(l *sessiontest.Log) {
				l.StartTurn("b").OpenStep("", "c1", "c2", "c3").Result("c1", "ok").Started("c2")
			},
			want: []string{
				"tool.result c2 " + session.CodeOutcomeUnknown,
				"tool.result c3 " + session.CodeNotStarted,
				"step.end aborted",
				"turn.end interrupted",
			},
		},
		{
			name: "step closed, turn open",
			build: func(l *sessiontest.Log) {
				l.StartTurn("b").Step("", "c1").OpenStep("", "c2").EndStep()
			},
			want: []string{"tool.result c2 " + session.CodeNotStarted, "turn.end interrupted"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := sessiontest.NewLog("s")
			tt.build(l)
			fix := session.RepairEvents(l.Events, repairTime)
			if diff := cmp.Diff(tt.want, summary(fix)); diff != "" {
				t.Fatalf("repair events (-want +got):\n%s", diff)
			}
			all := append(l.Events, fix...)
			if err := session.Balanced(all); err != nil {
				t.Errorf("repaired log: %v", err)
			}
			if again := session.RepairEvents(all, repairTime); again != nil {
				t.Errorf("a repaired log gets more repairs: %v", summary(again))
			}
			if len(fix) == 0 {
				return
			}
			last := l.Events[len(l.Events)-1]
			for i, e := range fix {
				if e.Seq != last.Seq+int64(i)+1 || !e.Time.Equal(repairTime) || e.Session != "s" || e.Turn != last.Turn || e.Run != last.Run {
					t.Errorf("repair event %d header = seq %d time %v session %q turn %q run %q; want seq %d, the repair time and the open turn's header",
						i, e.Seq, e.Time, e.Session, e.Turn, e.Run, last.Seq+int64(i)+1)
				}
			}
		})
	}
}

func TestB48_RepairTexts(t *testing.T) {
	l := sessiontest.NewLog("s").StartTurn("x").OpenStep("", "c1", "c2").Started("c1")
	fix := session.RepairEvents(l.Events, repairTime)
	want := []*session.ToolResult{
		{CallID: "c1", Name: "echo", Parts: []llm.Part{&llm.Text{Text: session.TextOutcomeUnknown}}, IsError: true, Code: session.CodeOutcomeUnknown, Outcome: session.OutcomeInterrupted, Interrupted: true},
		{CallID: "c2", Name: "echo", Parts: []llm.Part{&llm.Text{Text: session.TextNotStarted}}, IsError: true, Code: session.CodeNotStarted, Outcome: session.OutcomeInterrupted, Interrupted: true},
	}
	got := []*session.ToolResult{fix[0].Data.(*session.ToolResult), fix[1].Data.(*session.ToolResult)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repair results (-want +got):\n%s", diff)
	}
	for i, phrase := range []string{"its outcome is unknown; check before retrying", "retry it if it is still needed"} {
		if !strings.Contains(got[i].Parts[0].(*llm.Text).Text, phrase) {
			t.Errorf("result %d text does not say %q", i, phrase)
		}
	}
	// The derived view shows the repair results, not placeholders.
	msgs := session.Derive(append(l.Events, fix...))
	if err := checkPaired(msgs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]llm.Part(want[0].Parts), msgs[len(msgs)-1].Parts[0].(*llm.ToolResult).Parts); diff != "" {
		t.Errorf("derived result of c1 (-want +got):\n%s", diff)
	}
}

func TestRepairSubagentTurnFirst(t *testing.T) {
	l := sessiontest.NewLog("s").StartTurn("main").OpenStep("", "spawn").Started("spawn")
	sub := sessiontest.NewLog("s")
	sub.Run = "sub-run"
	sub.StartTurn("explore").OpenStep("", "k1")
	for _, e := range sub.Events {
		e.Seq = int64(len(l.Events) + 1)
		e.ParentRun = "run-1"
		e.Agent = "explorer"
		l.Events = append(l.Events, e)
	}
	fix := session.RepairEvents(l.Events, repairTime)
	want := []string{
		"tool.result k1 " + session.CodeNotStarted, "step.end aborted", "turn.end interrupted",
		"tool.result spawn " + session.CodeOutcomeUnknown, "step.end aborted", "turn.end interrupted",
	}
	if diff := cmp.Diff(want, summary(fix)); diff != "" {
		t.Fatalf("repair events (-want +got):\n%s", diff)
	}
	if fix[0].Agent != "explorer" || fix[0].ParentRun != "run-1" || fix[3].Agent != "" || fix[3].Run != "run-1" {
		t.Errorf("repair headers: %+v / %+v", fix[0], fix[3])
	}
	if err := session.Balanced(append(l.Events, fix...)); err != nil {
		t.Errorf("repaired log: %v", err)
	}
}

func TestRepairLog(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id, _ := st.Create(ctx, nil)
	l := sessiontest.NewLog(id).FullTurn("a").StartTurn("b").OpenStep("", "c1")
	if err := st.Append(ctx, id, l.Events...); err != nil {
		t.Fatal(err)
	}
	fix, err := session.RepairLog(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(fix) != 3 {
		t.Fatalf("RepairLog appended %v, want 3 events", summary(fix))
	}
	events, _ := sessiontest.ReadAll(ctx, st, id, 0)
	if err := session.Balanced(events); err != nil {
		t.Errorf("after RepairLog: %v", err)
	}
	if fix, err := session.RepairLog(ctx, st, id); err != nil || fix != nil {
		t.Errorf("second RepairLog = %v, %v; want nothing", summary(fix), err)
	}
	if _, err := session.RepairLog(ctx, st, "missing"); err == nil {
		t.Errorf("RepairLog of a missing session succeeded")
	}
}

func TestBalancedErrors(t *testing.T) {
	base := func() *sessiontest.Log { return sessiontest.NewLog("s") }
	tests := []struct {
		name string
		log  func() []session.Event
		want string
	}{
		{"gap", func() []session.Event {
			ev := base().FullTurn("a").Events
			return append(ev[:2], ev[3:]...)
		}, "has seq 4, want 3"},
		{"open turn", func() []session.Event { return base().StartTurn("a").Events }, "opened at seq 1 is not closed"},
		{"nested turn", func() []session.Event {
			return base().StartTurn("a").Add(&session.TurnStart{}).Events
		}, "turn.start at seq 3 while the turn opened at seq 1 is open"},
		{"outside a turn", func() []session.Event {
			return base().FullTurn("a").Add(&session.UserMessage{}).Events
		}, "user.message at seq"},
		{"step left open", func() []session.Event {
			return base().StartTurn("a").Add(&session.StepStart{Step: 1}).EndTurn().Events
		}, "while the step opened at seq 3 is open"},
		{"stray step.end", func() []session.Event {
			return base().StartTurn("a").EndStep().EndTurn().Events
		}, "step.end at seq 3 with no open step"},
		{"unanswered call", func() []session.Event {
			return base().StartTurn("a").OpenStep("", "c1").EndStep().EndTurn().Events
		}, `tool call "c1" (seq 4) has no result`},
		{"orphan result", func() []session.Event {
			return base().StartTurn("a").Result("zz", "x").EndTurn().Events
		}, `names unknown call "zz"`},
		{"double result", func() []session.Event {
			return base().StartTurn("a").OpenStep("", "c1").Result("c1", "x").Add(&session.ToolResult{CallID: "c1"}).EndStep().EndTurn().Events
		}, `answers call "c1" a second time`},
		{"repeated call id", func() []session.Event {
			return base().StartTurn("a").Step("", "c1").Step("", "c1").EndTurn().Events
		}, `tool call id "c1" repeated`},
		{"no payload", func() []session.Event {
			return []session.Event{{Seq: 1}}
		}, "seq 1 has no payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := session.Balanced(tt.log())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Balanced = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	ok := base().FullTurn("a", "c1", "c2").Add(&session.SessionMeta{Key: "k", Value: "v"}).FullTurn("b").Events
	if err := session.Balanced(ok); err != nil {
		t.Errorf("Balanced(good log) = %v", err)
	}
}
