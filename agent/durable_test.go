package agent_test

import (
	"context"
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

// readOnly wraps a tool and annotates it read-only, so a resume may run
// its calls again.
type readOnly struct{ tool.Tool }

func (r readOnly) Spec() tool.Spec {
	s := r.Tool.Spec()
	s.Annotations = &tool.Annotations{ReadOnly: true}
	return s
}

func (r readOnly) Unwrap() tool.Tool { return r.Tool }

// durableAgent is a durable agent over st and session "s" with m and ts.
func durableAgent(t *testing.T, st session.Store, m llm.Model, opts *agent.Options, ts ...tool.Tool) *agent.Agent {
	t.Helper()
	if opts == nil {
		opts = &agent.Options{}
	}
	opts.Model, opts.Store, opts.Session, opts.Tools, opts.Durable = m, st, "s", ts, true
	if opts.Provider == "" {
		opts.Provider, opts.ModelName = llmtest.Provider, "scripted"
	}
	if opts.Version == "" {
		opts.Version = "v1"
	}
	a, err := agent.New(opts)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// runAsync starts a Run and returns where its outcome arrives.
func runAsync(a *agent.Agent, prompt string) <-chan *agent.Result {
	done := make(chan *agent.Result, 1)
	go func() {
		res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: prompt})
		if err != nil && res == nil {
			res = &agent.Result{Reason: session.EndError, Text: err.Error()}
		}
		done <- res
	}()
	return done
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}

func balanced(t *testing.T, st session.Store) []session.Event {
	t.Helper()
	evs := readAll(t, st, "s")
	if err := session.Balanced(evs); err != nil {
		t.Fatalf("log not balanced: %v\n%s", err, dump(evs))
	}
	return evs
}

// TestDurable_SuspendMidBatchResumesWithOnlyTheMissingModelCalls: a turn
// suspended while its second call runs (the third not started) keeps the
// finished results, is resumed by another agent over the same store, runs
// the call that never started, and makes exactly the one model call that
// had not happened.
func TestDurable_SuspendMidBatchResumesWithOnlyTheMissingModelCalls(t *testing.T) {
	st := session.NewMemStore()
	gate := newGateTool("wait")
	m1 := llmtest.NewModel(llmtest.CallTools(call("c1", "echo", `{"text":"one"}`), call("c2", "wait", `{}`), call("c3", "echo", `{"text":"three"}`)))
	a1 := durableAgent(t, st, m1, &agent.Options{Parallel: 1}, echoTool(), gate)
	done := runAsync(a1, "go")
	waitStarted(t, gate.started)
	if err := a1.Suspend(time.Minute); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	close(gate.release) // the running call settles within the grace
	res := wait(t, done)
	if res.Reason != session.EndSuspended {
		t.Fatalf("suspended run ended %s, want %s", res.Reason, session.EndSuspended)
	}
	evs := readAll(t, st, "s")
	if got := ofType[*session.TurnEnd](evs); len(got) != 0 {
		t.Fatalf("a suspended turn was closed: %+v", got)
	}
	sus := ofType[*session.TurnSuspend](evs)
	if len(sus) != 1 || !cmp.Equal(sus[0].Pending, []llm.CallID{"c3"}) {
		t.Fatalf("turn.suspend = %+v, want one with pending [c3]", sus)
	}
	a1.Close()

	m2 := llmtest.NewModel(llmtest.Reply("all done"))
	a2 := durableAgent(t, st, m2, nil, echoTool(), newGateTool("wait"))
	res, err := a2.Resume(context.Background(), nil)
	if err != nil || res.Reason != session.EndCompleted || res.Text != "all done" {
		t.Fatalf("Resume = %v %q, %v; want completed \"all done\"", res.Reason, res.Text, err)
	}
	if m1.Calls() != 1 || m2.Calls() != 1 {
		t.Errorf("model calls: %d before the suspend, %d after; want 1 and 1", m1.Calls(), m2.Calls())
	}
	evs = balanced(t, st)
	if n := len(ofType[*session.TurnStart](evs)); n != 1 {
		t.Errorf("%d turn.start events; the resume must continue the one turn", n)
	}
	rs := results(evs)
	want := map[llm.CallID]string{"c1": "one", "c2": "wait done", "c3": "three"}
	for id, text := range want {
		if r := rs[id]; r == nil || resultText(r) != text {
			t.Errorf("result of %s = %+v, want %q", id, r, text)
		}
	}
	resumes := ofType[*session.TurnResume](evs)
	if len(resumes) != 1 || !resumes[0].Suspended || !cmp.Equal(resumes[0].Started, []llm.CallID{"c3"}) || len(resumes[0].Rerun)+len(resumes[0].Interrupted) != 0 {
		t.Errorf("turn.resume = %+v, want one of a suspended turn starting [c3]", resumes)
	}
	req := m2.Requests()[0]
	for _, s := range []string{"result c1: one", "result c2: wait done", "result c3: three"} {
		if !containsText(req, s) {
			t.Errorf("the resumed request lacks %q:\n%v", s, requestTexts(req))
		}
	}
	if got := lastEnd(t, evs); got.Reason != session.EndCompleted {
		t.Errorf("turn ended %s", got.Reason)
	}
}

// TestDurable_ResumeReRunsReadOnlyAndInterruptsOthers: two calls still
// running when a suspend's grace runs out are left without results; the
// resume runs the read-only one again and answers the other as
// interrupted, never running it a second time.
func TestDurable_ResumeReRunsReadOnlyAndInterruptsOthers(t *testing.T) {
	st := session.NewMemStore()
	look, touch := newGateTool("look"), newGateTool("touch")
	m1 := llmtest.NewModel(llmtest.CallTools(call("c1", "look", `{"p":1}`), call("c2", "touch", `{}`)))
	a1 := durableAgent(t, st, m1, nil, readOnly{look}, touch)
	done := runAsync(a1, "go")
	waitStarted(t, look.started)
	waitStarted(t, touch.started)
	if err := a1.Suspend(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if res := wait(t, done); res.Reason != session.EndSuspended {
		t.Fatalf("run ended %s, want suspended", res.Reason)
	}
	a1.Close()

	var looks, touches atomic.Int32
	var lookArgs atomic.Value
	// The same tools as before (the same definitions), counting calls.
	look2 := readOnly{&tool.Func{ToolSpec: look.Spec(), Fn: func(_ context.Context, c *tool.Call) (*tool.Result, error) {
		looks.Add(1)
		lookArgs.Store(string(c.Args))
		return tool.Text("looked"), nil
	}}}
	touch2 := &tool.Func{ToolSpec: touch.Spec(), Fn: func(context.Context, *tool.Call) (*tool.Result, error) {
		touches.Add(1)
		return tool.Text("touched again"), nil
	}}
	m2 := llmtest.NewModel(llmtest.Reply("ok"))
	a2 := durableAgent(t, st, m2, nil, look2, touch2)
	res, err := a2.Resume(context.Background(), nil)
	if err != nil || res.Reason != session.EndCompleted {
		t.Fatalf("Resume = %+v, %v", res, err)
	}
	if looks.Load() != 1 || touches.Load() != 0 {
		t.Errorf("after the resume look ran %d times, touch %d; want 1 and 0", looks.Load(), touches.Load())
	}
	if got := lookArgs.Load(); got != `{"p":1}` {
		t.Errorf("look re-ran with %v, want its recorded arguments", got)
	}
	evs := balanced(t, st)
	rs := results(evs)
	if r := rs["c1"]; r == nil || resultText(r) != "looked" || r.IsError {
		t.Errorf("c1 result = %+v, want the re-run's", r)
	}
	if r := rs["c2"]; r == nil || r.Code != session.CodeOutcomeUnknown || resultText(r) != session.TextOutcomeUnknown || !r.Interrupted {
		t.Errorf("c2 result = %+v, want the interrupted result (outcome unknown)", r)
	}
	if !containsText(m2.Requests()[0], "result c2: "+session.TextOutcomeUnknown) {
		t.Errorf("the model is not told c2 was interrupted:\n%v", requestTexts(m2.Requests()[0]))
	}
	rsm := ofType[*session.TurnResume](evs)
	if len(rsm) != 1 || !cmp.Equal(rsm[0].Rerun, []llm.CallID{"c1"}) || !cmp.Equal(rsm[0].Interrupted, []llm.CallID{"c2"}) {
		t.Errorf("turn.resume = %+v, want rerun [c1] and interrupted [c2]", rsm)
	}
}

// suspendedSession leaves session "s" of st with a turn suspended before
// its one call (of echo) started, by an agent of version v1.
func suspendedSession(t *testing.T, st session.Store) {
	t.Helper()
	var a *agent.Agent
	m := llmtest.NewModel(llmtest.Respond(func(*llm.Request) llmtest.Entry {
		if err := a.Suspend(0); err != nil {
			t.Errorf("Suspend: %v", err)
		}
		return llmtest.CallTool("c1", "echo", `{"text":"hi"}`)
	}))
	a = durableAgent(t, st, m, nil, echoTool())
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if err != nil || res.Reason != session.EndSuspended {
		t.Fatalf("Run = %v, %v; want suspended", res.Reason, err)
	}
	a.Close()
}

// TestDurable_MismatchedResumeIsRefused: an agent with other tools, another
// model or another version may not continue a turn; the error says which,
// and the turn stays open for the right agent.
func TestDurable_MismatchedResumeIsRefused(t *testing.T) {
	st := session.NewMemStore()
	suspendedSession(t, st)
	extra := funcTool("extra", func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("x"), nil })
	for _, tc := range []struct {
		name     string
		opts     *agent.Options
		tools    []tool.Tool
		what     string
		recorded string
		current  string
	}{
		{"tools", nil, []tool.Tool{echoTool(), extra}, "tools", "echo", "echo, extra"},
		{"model", &agent.Options{Provider: llmtest.Provider, ModelName: "other"}, []tool.Tool{echoTool()}, "model", llmtest.Provider + "/scripted", llmtest.Provider + "/other"},
		{"version", &agent.Options{Version: "v2"}, []tool.Tool{echoTool()}, "version", "v1", "v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.NewModel(llmtest.Reply("never"))
			a := durableAgent(t, st, m, tc.opts, tc.tools...)
			_, err := a.Resume(context.Background(), nil)
			var me *agent.ResumeMismatchError
			if !errors.As(err, &me) {
				t.Fatalf("Resume error = %v, want a *ResumeMismatchError", err)
			}
			got := [3]string{me.What, me.Recorded, me.Current}
			if d := cmp.Diff([3]string{tc.what, tc.recorded, tc.current}, got); d != "" {
				t.Errorf("mismatch (-want +got):\n%s", d)
			}
			if m.Calls() != 0 {
				t.Errorf("a refused resume called the model %d times", m.Calls())
			}
			a.Close()
		})
	}
	if ends := ofType[*session.TurnEnd](readAll(t, st, "s")); len(ends) != 0 {
		t.Fatalf("a refused resume closed the turn: %+v", ends)
	}
	m := llmtest.NewModel(llmtest.Reply("fine"))
	a := durableAgent(t, st, m, nil, echoTool())
	res, err := a.Resume(context.Background(), nil)
	if err != nil || res.Text != "fine" {
		t.Fatalf("Resume by the right agent = %q, %v", res.Text, err)
	}
	if r := results(balanced(t, st))["c1"]; r == nil || resultText(r) != "hi" {
		t.Errorf("the call that never started did not run on resume: %+v", r)
	}
	_, err = a.Resume(context.Background(), nil)
	if !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Resume of a finished turn = %v, want ErrNothingToResume", err)
	}
}

// TestDurable_ResumeSendsAnUnfinishedModelCallAgain: a turn cut short while
// its step's model call was in flight (nothing after the step's start)
// sends that call again, in the same step.
func TestDurable_ResumeSendsAnUnfinishedModelCallAgain(t *testing.T) {
	st := session.NewMemStore()
	ctx := context.Background()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var seq int64
	ev := func(p session.Payload) session.Event {
		seq++
		return session.Event{Seq: seq, Time: at, Session: "s", Turn: "turn-1", Run: "r0", Data: p}
	}
	if err := st.Append(ctx, "s", ev(&session.TurnStart{Trigger: session.TriggerPrompt}),
		ev(&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "what is 2+2"}}, Source: session.SourceUser}),
		ev(&session.StepStart{Step: 1})); err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(llmtest.Reply("4"))
	a := durableAgent(t, st, m, nil, echoTool())
	res, err := a.Resume(ctx, nil)
	if err != nil || res.Text != "4" || res.Turn != "turn-1" {
		t.Fatalf("Resume = %q in %s, %v", res.Text, res.Turn, err)
	}
	if m.Calls() != 1 || !containsText(m.Requests()[0], "user: what is 2+2") {
		t.Fatalf("want one request with the prompt, got %d", m.Calls())
	}
	evs := balanced(t, st)
	if n := len(ofType[*session.StepStart](evs)); n != 1 {
		t.Errorf("%d step.start events; the resumed call belongs to step 1", n)
	}
}

// TestDurable_RunInsteadOfResumeClosesTheOpenTurn: a new prompt given
// instead of a resume closes the open turn with the repair's records, as
// opening a session does without Durable, then runs.
func TestDurable_RunInsteadOfResumeClosesTheOpenTurn(t *testing.T) {
	st := session.NewMemStore()
	suspendedSession(t, st)
	m := llmtest.NewModel(llmtest.Reply("new"))
	a := durableAgent(t, st, m, nil, echoTool())
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "something else"})
	if err != nil || res.Text != "new" {
		t.Fatalf("Run = %q, %v", res.Text, err)
	}
	evs := balanced(t, st)
	ends := ofType[*session.TurnEnd](evs)
	if len(ends) != 2 || ends[0].Reason != session.EndInterrupted || ends[1].Reason != session.EndCompleted {
		t.Fatalf("turn ends = %+v, want interrupted then completed", ends)
	}
	if r := results(evs)["c1"]; r == nil || r.Code != session.CodeNotStarted {
		t.Errorf("the call that never started is answered %+v, want code %s", r, session.CodeNotStarted)
	}
	if _, err := a.Resume(context.Background(), nil); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Resume after the turn was closed = %v, want ErrNothingToResume", err)
	}
}

// TestDurable_SuspendWhenIdle: Suspend with no run in flight says so.
func TestDurable_SuspendWhenIdle(t *testing.T) {
	a := durableAgent(t, session.NewMemStore(), llmtest.NewModel(), nil)
	if err := a.Suspend(time.Second); !errors.Is(err, agent.ErrIdle) {
		t.Errorf("Suspend while idle = %v, want ErrIdle", err)
	}
}

// TestDurable_TurnsArePinned: a durable turn records its model, tools and
// version after its start; a plain one does not.
func TestDurable_TurnsArePinned(t *testing.T) {
	st := session.NewMemStore()
	a := durableAgent(t, st, llmtest.NewModel(llmtest.Reply("hi")), nil, echoTool())
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	evs := balanced(t, st)
	pins := ofType[*session.TurnPin](evs)
	want := &session.TurnPin{Provider: llmtest.Provider, Model: "scripted", Tools: []string{"echo"}, Version: "v1"}
	if len(pins) != 1 || evs[1].Data != session.Payload(pins[0]) {
		t.Fatalf("want one turn.pin right after the turn.start:\n%s", dump(evs))
	}
	if d := cmp.Diff(want, pins[0], cmpIgnoreHash); d != "" {
		t.Errorf("turn.pin (-want +got):\n%s", d)
	}
	if pins[0].ToolsHash == "" {
		t.Error("turn.pin has no tools hash")
	}
	h := newHarness(t, nil, llmtest.Reply("plain"))
	h.run("go")
	if n := len(ofType[*session.TurnPin](h.events())); n != 0 {
		t.Errorf("a plain turn wrote %d turn.pin", n)
	}
}

var cmpIgnoreHash = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ToolsHash" }, cmp.Ignore())

// TestDurable_SteerDuringASuspendReachesTheResume: a steer accepted while
// a batch suspends is not written between the batch's results; the
// resume delivers it after them, and its request sees it.
func TestDurable_SteerDuringASuspendReachesTheResume(t *testing.T) {
	st := session.NewMemStore()
	gate := newGateTool("wait")
	m := llmtest.NewModel(llmtest.CallTools(call("c1", "wait", `{}`), call("c2", "echo", `{"text":"two"}`)), llmtest.Reply("ok"))
	a := durableAgent(t, st, m, &agent.Options{Parallel: 1}, gate, echoTool())
	done := runAsync(a, "go")
	waitStarted(t, gate.started)
	if !a.Steer(&llm.Text{Text: "mind the tests"}) {
		t.Fatal("Steer refused")
	}
	if err := a.Suspend(time.Minute); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	if res := wait(t, done); res.Reason != session.EndSuspended {
		t.Fatalf("run ended %s", res.Reason)
	}
	if n := len(ofType[*session.SteeringMessage](readAll(t, st, "s"))); n != 0 {
		t.Fatalf("%d steering messages written inside the open step", n)
	}
	res, err := a.Resume(context.Background(), nil)
	if err != nil || res.Text != "ok" {
		t.Fatalf("Resume = %+v, %v", res, err)
	}
	evs := balanced(t, st)
	var order []string
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case *session.ToolResult:
			order = append(order, "result "+string(d.CallID))
		case *session.SteeringMessage:
			order = append(order, "steer "+partsText(d.Parts))
		}
	}
	if d := cmp.Diff([]string{"result c1", "result c2", "steer mind the tests"}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if !containsText(m.Requests()[1], "mind the tests") {
		t.Errorf("the request after the resume lacks the steer:\n%v", requestTexts(m.Requests()[1]))
	}
}

// TestDurable_ResumeAfterRepairRunsCallsThatNeverStarted: a turn closed by
// the crash repair with a call that never started is continued in a new
// turn (trigger resume) that runs the call, under a new id, through the
// whole pipeline; the repair's records stay as they were.
func TestDurable_ResumeAfterRepairRunsCallsThatNeverStarted(t *testing.T) {
	st := session.NewMemStore()
	ctx := context.Background()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []session.Event
	add := func(p session.Payload) {
		evs = append(evs, session.Event{Seq: int64(len(evs) + 1), Time: at, Session: "s", Turn: "turn-1", Run: "r0", Data: p})
	}
	add(&session.TurnStart{Trigger: session.TriggerPrompt})
	add(&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "touch it"}}, Source: session.SourceUser})
	add(&session.StepStart{Step: 1})
	add(&session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "c1", Name: "touch", Args: []byte(`{}`)}}, Finish: llm.FinishToolCalls})
	evs = append(evs, session.RepairEvents(evs, at)...)
	if err := st.Append(ctx, "s", evs...); err != nil {
		t.Fatal(err)
	}
	var touches atomic.Int32
	touch := funcTool("touch", func(context.Context, *tool.Call) (*tool.Result, error) {
		touches.Add(1)
		return tool.Text("touched"), nil
	})
	m := llmtest.NewModel(llmtest.Reply("done"))
	a, err := agent.New(&agent.Options{Model: m, Store: st, Session: "s", Tools: []tool.Tool{touch}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Resume(ctx, nil)
	if err != nil || res.Text != "done" || res.Turn != "turn-2" {
		t.Fatalf("Resume = %+v, %v", res, err)
	}
	if touches.Load() != 1 || m.Calls() != 1 {
		t.Errorf("touch ran %d times and the model was called %d times; want 1 and 1", touches.Load(), m.Calls())
	}
	got := balanced(t, st)
	for i := range evs {
		if d := diffEvent(evs[i], got[i]); d != "" {
			t.Errorf("event %d changed: %s", evs[i].Seq, d)
		}
	}
	if r := results(got)["c1_dup1"]; r == nil || resultText(r) != "touched" {
		t.Errorf("the call run again = %+v", r)
	}
	if ts := ofType[*session.TurnStart](got); len(ts) != 2 || ts[1].Trigger != session.TriggerResume {
		t.Errorf("turn starts = %+v, want the second triggered by resume", ts)
	}
	rsm := ofType[*session.TurnResume](got)
	if len(rsm) != 1 || rsm[0].Continues != "turn-1" || !cmp.Equal(rsm[0].Started, []llm.CallID{"c1"}) {
		t.Errorf("turn.resume = %+v", rsm)
	}
}
