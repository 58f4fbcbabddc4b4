package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// seed writes payloads as a session's log, one turn header for all.
func seed(t *testing.T, st session.Store, id session.ID, turns ...[]session.Payload) {
	t.Helper()
	if _, err := st.Create(context.Background(), &session.CreateRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	var evs []session.Event
	for i, turn := range turns {
		for _, p := range turn {
			evs = append(evs, session.Event{Seq: int64(len(evs) + 1), Time: t0, Session: id, Turn: session.TurnID("turn-" + string(rune('1'+i))), Run: "seed", Data: p})
		}
	}
	if err := st.Append(context.Background(), id, evs...); err != nil {
		t.Fatal(err)
	}
}

// openTurn is a prompted turn with user text, cut off inside its first
// step after the step's payloads.
func openTurn(user string, step ...session.Payload) []session.Payload {
	return append([]session.Payload{
		&session.TurnStart{Trigger: session.TriggerPrompt},
		&session.UserMessage{Parts: []llm.Part{text(user)}},
		&session.StepStart{Step: 1},
	}, step...)
}

// closedTurn is openTurn with its step and the turn ended.
func closedTurn(user string, end session.EndReason, step ...session.Payload) []session.Payload {
	return append(openTurn(user, step...), &session.StepEnd{Step: 1}, &session.TurnEnd{Reason: end})
}

// onSeeded opens an agent on session "s" of st, whose log the test seeded
// and checks itself. opts may be nil.
func onSeeded(t *testing.T, st session.Store, opts *agent.Options, script ...llmtest.Entry) *harness {
	t.Helper()
	if opts == nil {
		opts = &agent.Options{}
	}
	opts.Store, opts.Session = st, "s"
	h := newHarness(t, opts, script...)
	h.seeded = true
	return h
}

func assistantCalls(calls ...llm.ToolCall) *session.AssistantMessage {
	var parts []llm.Part
	for i := range calls {
		parts = append(parts, &calls[i])
	}
	return &session.AssistantMessage{Parts: parts, Finish: llm.FinishToolCalls}
}

func toolResult(id, s string) *session.ToolResult {
	return &session.ToolResult{CallID: llm.CallID(id), Parts: []llm.Part{text(s)}, Outcome: session.OutcomeExecute}
}

// balancedFrom checks the events from index i on as a log of their own.
func balancedFrom(t *testing.T, evs []session.Event, i int) {
	t.Helper()
	tail := append([]session.Event(nil), evs[i:]...)
	for j := range tail {
		tail[j].Seq = int64(j + 1)
	}
	if err := session.Balanced(tail); err != nil {
		t.Fatalf("the agent's events are not balanced: %v\n%s", err, dump(tail))
	}
}

// runRepaired seeds session "s" with turn and runs one more prompt on it:
// what the agent wrote must be balanced and hold one repair, of kind, to
// call id.
func runRepaired(t *testing.T, turn []session.Payload, kind string, id llm.CallID) (*harness, session.Store) {
	t.Helper()
	st := session.NewMemStore()
	seed(t, st, "s", turn)
	h := onSeeded(t, st, nil, llmtest.Reply("ok"))
	h.run("again")
	evs := readAll(t, st, "s")
	balancedFrom(t, evs, len(turn))
	reps := ofType[*session.Repair](evs)
	if len(reps) != 1 || reps[0].Kind != kind || reps[0].CallID != id {
		t.Errorf("repairs = %+v", reps)
	}
	return h, st
}

func TestB32_OrphanResultRepaired(t *testing.T) {
	h, st := runRepaired(t, closedTurn("hi", session.EndCompleted,
		&session.AssistantMessage{Parts: []llm.Part{text("hello")}, Finish: llm.FinishStop},
		toolResult("ghost", "I answer nothing")), "orphan-result", "ghost")
	for _, s := range requestTexts(h.m.Requests()[0]) {
		if s == "result ghost: I answer nothing" {
			t.Error("the orphan result reached the model")
		}
	}
	// Reopening does not record the same repair again.
	h.a.Close()
	onSeeded(t, st, nil, llmtest.Reply("ok")).run("third")
	if n := len(ofType[*session.Repair](readAll(t, st, "s"))); n != 1 {
		t.Errorf("%d repair events after reopening, want 1", n)
	}
}

func TestB32_MissingResultRepaired(t *testing.T) {
	h, _ := runRepaired(t, closedTurn("hi", session.EndError, assistantCalls(call("lost", "echo", `{}`))), "missing-result", "lost")
	req := h.m.Requests()[0]
	msgs := req.Messages
	if len(msgs) < 3 || msgs[1].Role != llm.RoleAssistant || msgs[2].Role != llm.RoleUser {
		t.Fatalf("request = %v", requestTexts(req))
	}
	if _, ok := msgs[2].Parts[0].(*llm.ToolResult); !ok {
		t.Errorf("the call is not answered right after it: %v", requestTexts(req))
	}
}

func TestB32_DuplicateIDsRenamed(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}},
		llmtest.CallTool("dup", "echo", `{"text":"1"}`), llmtest.Reply("one"),
		llmtest.CallTool("dup", "echo", `{"text":"2"}`), llmtest.Reply("two"))
	h.run("first")
	h.run("second")
	evs := h.events()
	reps := ofType[*session.Repair](evs)
	if len(reps) != 1 || reps[0].Kind != "duplicate-id" {
		t.Fatalf("repairs = %+v", reps)
	}
	req := h.m.Requests()[3]
	ids := map[llm.CallID]int{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls() {
			ids[c.ID]++
		}
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("id %s sent %d times: %v", id, n, requestTexts(req))
		}
	}
}

func TestB32_StrictPairingErrors(t *testing.T) {
	st := session.NewMemStore()
	seed(t, st, "s", closedTurn("hi", session.EndError, assistantCalls(call("lost", "echo", `{}`))))
	h := onSeeded(t, st, &agent.Options{StrictPairing: true}, llmtest.Reply("never"))
	_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "again"})
	if !errors.Is(err, agent.ErrUnpaired) || h.m.Calls() != 0 {
		t.Errorf("err=%v calls=%d", err, h.m.Calls())
	}
	balancedFrom(t, readAll(t, st, "s"), 6)
}

func TestB48_OpenTailRepairedOnOpen(t *testing.T) {
	st := session.NewMemStore()
	seed(t, st, "s", openTurn("run both",
		&session.RequestHeader{Provider: llmtest.Provider, Model: "scripted", Reason: "initial"},
		assistantCalls(call("started", "echo", `{"text":"a"}`), call("queued", "echo", `{"text":"b"}`)),
		&session.ToolCall{CallID: "started", Name: "echo", Args: json.RawMessage(`{"text":"a"}`)}))
	h := newHarness(t, &agent.Options{Store: st, Session: "s", Tools: []tool.Tool{echoTool()}}, llmtest.Reply("resumed"))
	evs := h.events()
	want := []string{"tool.result", "tool.result", "step.end", "turn.end"}
	if diff := cmp.Diff(want, types(evs[6:])); diff != "" {
		t.Fatalf("repair (-want +got):\n%s", diff)
	}
	rs := results(evs)
	if rs["started"].Code != session.CodeOutcomeUnknown || rs["queued"].Code != session.CodeNotStarted {
		t.Errorf("codes: %s %s", rs["started"].Code, rs["queued"].Code)
	}
	if lastEnd(t, evs).Reason != session.EndInterrupted {
		t.Errorf("end = %+v", lastEnd(t, evs))
	}
	res := h.run("continue")
	if res.Text != "resumed" || res.Turn != "turn-2" {
		t.Errorf("text=%q turn=%s", res.Text, res.Turn)
	}
	h.events()
}

// flakyStore fails appends once armed, like a full disk.
type flakyStore struct {
	session.Store
	fail atomic.Bool
}

var errDiskFull = errors.New("no space left on device")

func (s *flakyStore) Append(ctx context.Context, id session.ID, evs ...session.Event) error {
	if s.fail.Load() {
		return errDiskFull
	}
	return s.Store.Append(ctx, id, evs...)
}

func TestB48_FailedAppendStopsRunAndReopenRepairs(t *testing.T) {
	mem := session.NewMemStore()
	st := &flakyStore{Store: mem}
	g := newGateTool("work")
	h := newHarness(t, &agent.Options{Store: st, Session: "s", Tools: []tool.Tool{g}}, llmtest.CallTool("c1", "work", `{}`), llmtest.Reply("never"))
	h.seeded = true // the log is left open on purpose
	done := h.runAsync("go")
	waitStarted(t, g.started)
	st.fail.Store(true)
	close(g.release)
	out := <-done
	if !errors.Is(out.err, errDiskFull) {
		t.Fatalf("err = %v, want the store's error", out.err)
	}
	h.a.Close()
	st.fail.Store(false)
	h2 := newHarness(t, &agent.Options{Store: mem, Session: "s", Tools: []tool.Tool{echoTool()}}, llmtest.Reply("back"))
	if res := h2.run("again"); res.Text != "back" {
		t.Errorf("text = %q", res.Text)
	}
	evs := h2.events()
	if r := results(evs)["c1"]; r == nil || r.Code != session.CodeOutcomeUnknown {
		t.Errorf("the started call was not closed as unknown:\n%s", dump(evs))
	}
}

func TestB48_CallNotOnRecordNeverRuns(t *testing.T) {
	mem := session.NewMemStore()
	st := &flakyStore{Store: mem}
	ran := false
	tl := funcTool("t", func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("x"), nil })
	var h *harness
	h = newHarness(t, &agent.Options{Store: st, Session: "s", Tools: []tool.Tool{tl}}, llmtest.Respond(func(*llm.Request) llmtest.Entry {
		st.fail.Store(true) // the disk fills while the model answers
		return llmtest.CallTool("c1", "t", `{}`)
	}))
	h.seeded = true
	if _, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); !errors.Is(err, errDiskFull) {
		t.Fatalf("err = %v", err)
	}
	if ran {
		t.Error("a call ran though its tool.call could not be written")
	}
}

func TestB32_DuplicateIDsInOneResponseRenamed(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}},
		llmtest.CallTools(call("same", "echo", `{"text":"1"}`), call("same", "echo", `{"text":"2"}`)), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	rs := results(evs)
	if len(rs) != 2 || resultText(rs["same"]) != "1" {
		t.Errorf("results: %+v\n%s", rs, dump(evs))
	}
	if reps := ofType[*session.Repair](evs); len(reps) != 1 || reps[0].Kind != "duplicate-id" {
		t.Errorf("repairs = %+v", reps)
	}
}
