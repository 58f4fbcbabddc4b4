package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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
