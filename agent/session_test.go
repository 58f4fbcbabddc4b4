package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
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

func TestB32_OrphanResultRepaired(t *testing.T) {
	st := session.NewMemStore()
	seed(t, st, "s", []session.Payload{
		&session.TurnStart{Trigger: session.TriggerPrompt},
		&session.UserMessage{Parts: []llm.Part{text("hi")}},
		&session.StepStart{Step: 1},
		&session.AssistantMessage{Parts: []llm.Part{text("hello")}, Finish: llm.FinishStop},
		toolResult("ghost", "I answer nothing"),
		&session.StepEnd{Step: 1},
		&session.TurnEnd{Reason: session.EndCompleted},
	})
	h := newHarness(t, &agent.Options{Store: st, Session: "s"}, llmtest.Reply("ok"))
	h.seeded = true
	h.run("again")
	evs := readAll(t, st, "s")
	balancedFrom(t, evs, 7)
	reps := ofType[*session.Repair](evs)
	if len(reps) != 1 || reps[0].Kind != "orphan-result" || reps[0].CallID != "ghost" {
		t.Errorf("repairs = %+v", reps)
	}
	for _, s := range requestTexts(h.m.Requests()[0]) {
		if s == "result ghost: I answer nothing" {
			t.Error("the orphan result reached the model")
		}
	}
	// Reopening does not record the same repair again.
	h.a.Close()
	h2 := newHarness(t, &agent.Options{Store: st, Session: "s"}, llmtest.Reply("ok"))
	h2.seeded = true
	h2.run("third")
	if n := len(ofType[*session.Repair](readAll(t, st, "s"))); n != 1 {
		t.Errorf("%d repair events after reopening, want 1", n)
	}
}

func TestB32_MissingResultRepaired(t *testing.T) {
	st := session.NewMemStore()
	seed(t, st, "s", []session.Payload{
		&session.TurnStart{Trigger: session.TriggerPrompt},
		&session.UserMessage{Parts: []llm.Part{text("hi")}},
		&session.StepStart{Step: 1},
		assistantCalls(call("lost", "echo", `{}`)),
		&session.StepEnd{Step: 1},
		&session.TurnEnd{Reason: session.EndError},
	})
	h := newHarness(t, &agent.Options{Store: st, Session: "s"}, llmtest.Reply("ok"))
	h.seeded = true
	h.run("again")
	evs := readAll(t, st, "s")
	balancedFrom(t, evs, 6)
	reps := ofType[*session.Repair](evs)
	if len(reps) != 1 || reps[0].Kind != "missing-result" || reps[0].CallID != "lost" {
		t.Errorf("repairs = %+v", reps)
	}
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
	seed(t, st, "s", []session.Payload{
		&session.TurnStart{Trigger: session.TriggerPrompt},
		&session.UserMessage{Parts: []llm.Part{text("hi")}},
		&session.StepStart{Step: 1},
		assistantCalls(call("lost", "echo", `{}`)),
		&session.StepEnd{Step: 1},
		&session.TurnEnd{Reason: session.EndError},
	})
	h := newHarness(t, &agent.Options{Store: st, Session: "s", StrictPairing: true}, llmtest.Reply("never"))
	h.seeded = true
	_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "again"})
	if !errors.Is(err, agent.ErrUnpaired) || h.m.Calls() != 0 {
		t.Errorf("err=%v calls=%d", err, h.m.Calls())
	}
	balancedFrom(t, readAll(t, st, "s"), 6)
}

func TestB48_OpenTailRepairedOnOpen(t *testing.T) {
	st := session.NewMemStore()
	seed(t, st, "s", []session.Payload{
		&session.TurnStart{Trigger: session.TriggerPrompt},
		&session.UserMessage{Parts: []llm.Part{text("run both")}},
		&session.StepStart{Step: 1},
		&session.RequestHeader{Provider: llmtest.Provider, Model: "scripted", Reason: "initial"},
		assistantCalls(call("started", "echo", `{"text":"a"}`), call("queued", "echo", `{"text":"b"}`)),
		&session.ToolCall{CallID: "started", Name: "echo", Args: json.RawMessage(`{"text":"a"}`)},
	})
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

func TestStructuredOutputWithOneCorrectiveRetry(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer"}},"required":["city","population"]}`)
	h := newHarness(t, nil, llmtest.Reply(`{"city": "Lyon"}`), llmtest.Reply("```json\n{\"city\": \"Lyon\", \"population\": 522000}\n```"))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "Lyon?", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		City       string `json:"city"`
		Population int    `json:"population"`
	}
	if err := res.Decode(&got); err != nil || got.City != "Lyon" || got.Population != 522000 {
		t.Errorf("decoded %+v, %v", got, err)
	}
	if rf := h.m.Requests()[0].ResponseFormat; rf == nil || string(rf.Schema) != string(schema) {
		t.Errorf("response format = %+v", rf)
	}
	evs := h.events()
	ums := ofType[*session.UserMessage](evs)
	if len(ums) != 2 || ums[1].Source != session.SourceSystem || res.Steps != 2 {
		t.Errorf("corrective message: %+v steps=%d", ums, res.Steps)
	}
}

func TestStructuredOutputGivesUpAfterOneRetry(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("not json"), llmtest.Reply("still not json"), llmtest.Reply("never"))
	_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "q", Schema: json.RawMessage(`{"type":"object"}`)})
	if !errors.Is(err, agent.ErrInvalidOutput) || h.m.Calls() != 2 {
		t.Errorf("err=%v calls=%d", err, h.m.Calls())
	}
	if end := lastEnd(t, h.events()); end.Code != "invalid-output" {
		t.Errorf("end = %+v", end)
	}
}

func TestRunTyped(t *testing.T) {
	type Verdict struct {
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
	}
	h := newHarness(t, nil, llmtest.Reply(`{"ok": true, "reason": "tests pass"}`))
	v, res, err := agent.RunTyped[Verdict](context.Background(), h.a, &agent.RunRequest{Prompt: "verdict?"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Verdict{true, "tests pass"}, v); diff != "" || res.Output == nil {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSummaryFromLogEqualsResult(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: denyGate("nope")},
		llmtest.Fail(overloaded(0)),
		llmtest.CallTools(call("c1", "echo", `{"text":"x"}`)),
		llmtest.Reply("ok"))
	res := h.run("go")
	evs := h.events()
	fromResult := res.Summary()
	fromLog := agent.Summarize(evs)
	if diff := cmp.Diff(fromResult, fromLog); diff != "" {
		t.Errorf("summaries differ (-result +log):\n%s", diff)
	}
	if len(fromLog.Retries) != 1 || len(fromLog.Blocked) != 1 || fromLog.Steps != 2 || fromLog.Usage.Input != 20 || fromLog.Ends["completed"] != 1 {
		t.Errorf("summary = %+v", fromLog)
	}
	data, err := json.Marshal(fromLog)
	if err != nil {
		t.Fatal(err)
	}
	var back agent.RunSummary
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*fromLog, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestStreamYieldsEventsAndDeltas(t *testing.T) {
	h := newHarness(t, nil, llmtest.Chunks(
		&llm.TextDelta{Text: "Hel"}, &llm.TextDelta{Text: "lo"}, &llm.Finish{Reason: llm.FinishStop}))
	var seqs []int64
	var deltas string
	for ev, err := range h.a.Stream(context.Background(), &agent.RunRequest{Prompt: "hi"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq == 0 {
			deltas += ev.Data.(*session.AssistantChunk).Deltas[0].Text
			continue
		}
		seqs = append(seqs, ev.Seq)
	}
	evs := h.events()
	if deltas != "Hello" || len(seqs) != len(evs) {
		t.Errorf("deltas=%q seqs=%v events=%d", deltas, seqs, len(evs))
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seqs = %v", seqs)
		}
	}
}

func TestStreamBreakCancelsRun(t *testing.T) {
	h := newHarness(t, nil, llmtest.HangAfter(&llm.TextDelta{Text: "partial"}))
	for ev := range h.a.Stream(context.Background(), &agent.RunRequest{Prompt: "hi"}) {
		if ev.Seq == 0 {
			break
		}
	}
	evs := h.events()
	if end := lastEnd(t, evs); end.Reason != session.EndAborted || end.Cause != "stream-closed" {
		t.Errorf("end = %+v", end)
	}
}

func TestB02_CloseMidTurnLeavesNoGoroutine(t *testing.T) {
	before := numGoroutines()
	g := newGateTool("work")
	hs := newObserverSet()
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}, Hooks: hs}, llmtest.CallTool("c1", "work", `{}`))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	if err := h.a.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := h.a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "x"}); !errors.Is(err, agent.ErrClosed) {
		t.Errorf("Run after Close = %v", err)
	}
	h.events()
	checkNoLeak(t, before)
}

type closerTool struct {
	*tool.Func
	closed bool
}

func (c *closerTool) Close() error { c.closed = true; return nil }

func TestCloseClosesToolResources(t *testing.T) {
	ct := &closerTool{Func: funcTool("bg", func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil })}
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{ct}})
	h.a.Close()
	if !ct.closed {
		t.Error("Close did not close the tool")
	}
}

func TestResetStartsNewSession(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("one"), llmtest.Reply("two"))
	h.run("first")
	old := h.a.Session()
	if err := h.a.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.a.Session() == old {
		t.Fatal("Reset kept the session")
	}
	h.run("second")
	if got := requestTexts(h.m.Requests()[1]); len(got) != 1 {
		t.Errorf("request after Reset = %v", got)
	}
	h.events()
}

func TestWaitIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, llmtest.Reply("ok").WithDelay(20*time.Millisecond))
		done := h.runAsync("go")
		waitCalls(h, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.a.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Error("WaitIdle returned before the run ended")
		}
	})
}

type closeFlag struct{ closed bool }

func (c *closeFlag) Close() error { c.closed = true; return nil }

func TestCloseClosesClosers(t *testing.T) {
	c := &closeFlag{}
	h := newHarness(t, &agent.Options{Closers: []io.Closer{c}})
	h.a.Close()
	if !c.closed {
		t.Error("Close did not close Options.Closers")
	}
}

func TestB05_ReopeningAJSONLStoreChangesNothing(t *testing.T) {
	script := func() []llmtest.Entry {
		return []llmtest.Entry{
			llmtest.CallTool("c1", "echo", `{"text":"one"}`), llmtest.Reply("first done"),
			llmtest.CallTool("c2", "echo", `{"text":"two"}`), llmtest.Reply("second done"),
		}
	}
	// Without reopening.
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}}, script()...)
	h.run("first")
	h.run("second")
	want := h.m.Requests()

	// Reopening the store and the agent between the turns.
	dir := t.TempDir()
	m := llmtest.NewModel(script()...)
	open := func() (*jsonl.Store, *agent.Agent) {
		st, err := jsonl.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(&agent.Options{Model: m, Provider: llmtest.Provider, ModelName: "scripted", Store: st, Session: "s", Tools: []tool.Tool{echoTool()}})
		if err != nil {
			t.Fatal(err)
		}
		return st, a
	}
	st, a := open()
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "first"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	st.Close()
	st, a = open()
	defer st.Close()
	defer a.Close()
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "second"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, m.Requests()); diff != "" {
		t.Errorf("requests differ after reopening (-continuous +reopened):\n%s", diff)
	}
	if err := session.Balanced(readAll(t, st, "s")); err != nil {
		t.Error(err)
	}
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
