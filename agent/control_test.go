package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func text(s string) llm.Part { return &llm.Text{Text: s} }

// runAsync starts a run and returns a channel with its outcome.
func (h *harness) runAsync(prompt string) chan runOutcome {
	return h.runAsyncCtx(context.Background(), prompt)
}

// runAsyncCtx is runAsync under ctx.
func (h *harness) runAsyncCtx(ctx context.Context, prompt string) chan runOutcome {
	ch := make(chan runOutcome, 1)
	go func() {
		res, err := h.a.Run(ctx, &agent.RunRequest{Prompt: prompt})
		ch <- runOutcome{res, err}
	}()
	return ch
}

// hungRun starts a run, under ctx, on a model that hangs until cancelled,
// and returns once the model has been called. It runs in a synctest bubble.
func hungRun(t *testing.T, ctx context.Context) (*harness, chan runOutcome) {
	t.Helper()
	h := newHarness(t, nil, llmtest.Hang())
	done := h.runAsyncCtx(ctx, "go")
	waitCalls(h, 1)
	return h, done
}

// steerDuringTool runs one call of a held tool, steers while it runs, then
// lets it finish, and returns the run's outcome.
func steerDuringTool(t *testing.T, steer string) (*harness, runOutcome) {
	t.Helper()
	g := newGateTool("work")
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}}, llmtest.CallTool("c1", "work", `{}`), llmtest.Reply("ok"))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	if !h.a.Steer(text(steer)) {
		t.Fatal("Steer refused during a run")
	}
	close(g.release)
	return h, <-done
}

type runOutcome struct {
	res *agent.Result
	err error
}

func TestB18_SteerDuringToolLandsInNextRequest(t *testing.T) {
	h, _ := steerDuringTool(t, "also check the tests")
	evs := h.events()
	var order []string
	for _, ev := range evs {
		switch ev.Data.(type) {
		case *session.ToolResult, *session.SteeringMessage, *session.StepStart:
			order = append(order, ev.Data.EventType())
		}
	}
	want := []string{"step.start", "tool.result", "steering.message", "step.start"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	req := h.m.Requests()[1]
	if !containsText(req, "also check the tests") {
		t.Errorf("next request lacks the steer: %v", requestTexts(req))
	}
	// The steer never splits the call from its result.
	msgs := req.Messages
	for i, m := range msgs {
		if len(m.ToolCalls()) > 0 {
			if i+1 >= len(msgs) || !strings.HasPrefix(requestTexts(&llm.Request{Messages: msgs[i+1 : i+2]})[0], "result ") {
				t.Errorf("message after the call is not its result: %v", requestTexts(req))
			}
		}
	}
}

func TestB19_SteerWhileIdleIsRefused(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("ok"))
	if h.a.Steer(text("hello")) {
		t.Error("Steer while idle returned true")
	}
	if h.a.FollowUp(text("hello")) {
		t.Error("FollowUp while idle returned true")
	}
	h.run("go")
	if n := len(h.m.Requests()[0].Messages); n != 1 {
		t.Errorf("the refused steer reached the model: %d messages", n)
	}
}

func TestB20_FollowUpAddsAStep(t *testing.T) {
	var h *harness
	h = newHarness(t, nil,
		llmtest.Respond(func(*llm.Request) llmtest.Entry {
			h.a.FollowUp(text("and one more thing"))
			return llmtest.Reply("first")
		}),
		llmtest.Reply("second"))
	res := h.run("go")
	evs := h.events()
	if res.Steps != 2 || res.Text != "second" {
		t.Errorf("steps=%d text=%q", res.Steps, res.Text)
	}
	ums := ofType[*session.UserMessage](evs)
	if len(ums) != 2 || ums[1].Source != session.SourceFollowUp {
		t.Errorf("user messages: %+v", ums)
	}
	if !containsText(h.m.Requests()[1], "and one more thing") {
		t.Errorf("follow-up not in the request")
	}
}

func TestB20_NoFollowUpEndsTurn(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("only"))
	if res := h.run("go"); res.Steps != 1 {
		t.Errorf("steps = %d", res.Steps)
	}
}

func TestB21_InjectWhileIdleSurvivesReopen(t *testing.T) {
	st := session.NewMemStore()
	h := newHarness(t, &agent.Options{Store: st, Session: "s"})
	if err := h.a.Inject(context.Background(), text("the build is red")); err != nil {
		t.Fatal(err)
	}
	evs := h.events()
	if diff := cmp.Diff([]string{"turn.start", "context.message", "turn.end"}, types(evs)); diff != "" {
		t.Errorf("inject did not start a turn (-want +got):\n%s", diff)
	}
	h.a.Close()
	h2 := newHarness(t, &agent.Options{Store: st, Session: "s"}, llmtest.Reply("ok"))
	h2.run("why?")
	if !containsText(h2.m.Requests()[0], "the build is red") {
		t.Errorf("request lacks the injected context: %v", requestTexts(h2.m.Requests()[0]))
	}
	h2.events()
}

func TestB21_InjectDuringRunSeenNextStep(t *testing.T) {
	g := newGateTool("work")
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}}, llmtest.CallTool("c1", "work", `{}`), llmtest.Reply("ok"))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	h.a.Inject(context.Background(), text("FYI: CI passed"))
	close(g.release)
	<-done
	evs := h.events()
	if len(ofType[*session.ContextMessage](evs)) != 1 || !containsText(h.m.Requests()[1], "FYI: CI passed") {
		t.Errorf("inject not delivered:\n%s", dump(evs))
	}
}

func TestB22_CancelMidStreamKeepsText(t *testing.T) {
	streamed := make(chan struct{}, 4)
	hs := new(hook.Set).Observe("typing", session.TypeAssistantChunk, func(session.Event) { streamed <- struct{}{} })
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.HangAfter(
		&llm.TextDelta{Index: 0, Text: "Let me think"},
		&llm.ToolCallDelta{Index: 1, ID: "c1", Name: "echo", Args: `{"te`}))
	done := h.runAsync("go")
	<-streamed
	<-streamed // both deltas are in
	h.a.Cancel("user")
	out := <-done
	evs := h.events()
	ams := ofType[*session.AssistantMessage](evs)
	if len(ams) != 1 || !ams[0].Interrupted {
		t.Fatalf("assistant messages: %+v", ams)
	}
	msg := llm.Message{Parts: ams[0].Parts}
	if msg.Text() != "Let me think" || len(msg.ToolCalls()) != 0 {
		t.Errorf("kept %q with %d calls", msg.Text(), len(msg.ToolCalls()))
	}
	end := lastEnd(t, evs)
	if end.Reason != session.EndAborted || end.Cause != "user" || out.res.Cause != "user" {
		t.Errorf("end = %+v", end)
	}
}

func TestB22_CancelBeforeContentRecordsNoMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, done := hungRun(t, context.Background())
		h.a.Cancel("parent")
		<-done
		evs := h.events()
		if n := len(ofType[*session.AssistantMessage](evs)); n != 0 {
			t.Errorf("%d assistant messages", n)
		}
		if end := lastEnd(t, evs); end.Cause != "parent" {
			t.Errorf("cause = %q", end.Cause)
		}
	})
}

func TestB22_ContextCancelIsParentCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		h, done := hungRun(t, ctx)
		cancel()
		<-done
		if end := lastEnd(t, h.events()); end.Reason != session.EndAborted || end.Cause != "parent" {
			t.Errorf("end = %+v", end)
		}
	})
}

func TestB23_CancelDuringBatch(t *testing.T) {
	g := newGateTool("work")
	h := newHarness(t, &agent.Options{Parallel: 1, Tools: []tool.Tool{g}},
		llmtest.CallTools(call("c1", "work", `{}`), call("c2", "work", `{}`)))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	h.a.Cancel("user")
	<-done
	evs := h.events()
	rs := results(evs)
	if got := resultText(rs["c1"]); got != "tool call aborted" || !rs["c1"].Interrupted {
		t.Errorf("c1 = %q", got)
	}
	if got := resultText(rs["c2"]); got != "tool call aborted before dispatch" {
		t.Errorf("c2 = %q", got)
	}
	if lastEnd(t, evs).Reason != session.EndAborted {
		t.Errorf("end = %+v", lastEnd(t, evs))
	}
}

// cancelStubborn starts a call c1 of a tool that ignores cancellation,
// with grace for running calls, and cancels the run while the call holds.
func cancelStubborn(t *testing.T, name string, grace time.Duration) (*harness, *gateTool, chan runOutcome) {
	t.Helper()
	g := newGateTool(name)
	g.ignore = true
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}, ToolGrace: grace}, llmtest.CallTool("c1", name, `{}`))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	h.a.Cancel("user")
	return h, g, done
}

func TestB23_RunningCallThatFinishesKeepsItsResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, g, done := cancelStubborn(t, "work", 5*time.Second)
		synctest.Wait() // the cancel has reached the loop
		close(g.release)
		<-done
		if got := resultText(results(h.events())["c1"]); got != "done anyway" {
			t.Errorf("c1 = %q", got)
		}
	})
}

func TestB23_StuckCallIsAbortedAfterGrace(t *testing.T) {
	before := numGoroutines()
	h, g, done := cancelStubborn(t, "stuck", 20*time.Millisecond)
	<-done
	if got := resultText(results(h.events())["c1"]); got != "tool call aborted" {
		t.Errorf("c1 = %q", got)
	}
	close(g.release) // let the abandoned call end; Close waits for it
	h.a.Close()
	checkNoLeak(t, before)
}

func TestB24_CancelToolLeavesOthersRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newGateTool("a"), newGateTool("b")
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{a, b}}, llmtest.CallTools(call("c1", "a", `{}`), call("c2", "b", `{}`)), llmtest.Reply("ok"))
		done := h.runAsync("go")
		waitStarted(t, a.started)
		waitStarted(t, b.started)
		if err := h.a.CancelTool("c1", "too slow"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the cancel has reached the loop
		close(b.release)
		out := <-done
		rs := results(h.events())
		if got := resultText(rs["c1"]); got != "tool call cancelled: too slow" || !rs["c1"].IsError || rs["c1"].Outcome != session.OutcomeCancelled {
			t.Errorf("c1 = %q %+v", got, rs["c1"])
		}
		if got := resultText(rs["c2"]); got != "b done" {
			t.Errorf("c2 = %q", got)
		}
		if out.res.Reason != session.EndCompleted {
			t.Errorf("end = %s", out.res.Reason)
		}
	})
}

func TestB24_CancelToolBeforeDispatchIsParked(t *testing.T) {
	a := newGateTool("a")
	ran := false
	b := funcTool("b", func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("b"), nil })
	h := newHarness(t, &agent.Options{Parallel: 1, Tools: []tool.Tool{a, b}}, llmtest.CallTools(call("c1", "a", `{}`), call("c2", "b", `{}`)), llmtest.Reply("ok"))
	done := h.runAsync("go")
	waitStarted(t, a.started)
	if err := h.a.CancelTool("c2", "not needed"); err != nil {
		t.Fatal(err)
	}
	close(a.release)
	<-done
	evs := h.events()
	if ran {
		t.Error("the parked call ran")
	}
	if got := resultText(results(evs)["c2"]); !strings.Contains(got, "not needed") {
		t.Errorf("c2 = %q", got)
	}
	for _, c := range ofType[*session.ToolCall](evs) {
		if c.CallID == "c2" {
			t.Error("a tool.call was recorded for a call that never started")
		}
	}
}

func TestB24_CancelFinishedCallSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newGateTool("b")
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool(), b}}, llmtest.CallTools(call("c1", "echo", `{"text":"x"}`), call("c2", "b", `{}`)), llmtest.Reply("ok"))
		done := h.runAsync("go")
		waitStarted(t, b.started)
		synctest.Wait() // c1 has ended and b holds
		if results(readAll(t, h.store, h.a.Session()))["c1"] == nil {
			t.Fatal("c1 has not finished while b holds")
		}
		if err := h.a.CancelTool("c1", "late"); !errors.Is(err, agent.ErrCallFinished) {
			t.Errorf("CancelTool of a finished call = %v", err)
		}
		close(b.release)
		<-done
		if got := resultText(results(h.events())["c1"]); got != "x" {
			t.Errorf("c1 = %q", got)
		}
	})
}

func TestB24_CancelCallOfEarlierStepSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newGateTool("b")
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool(), b}},
			llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.CallTool("c2", "echo", `{"text":"y"}`),
			llmtest.CallTool("c3", "b", `{}`), llmtest.Reply("ok"))
		done := h.runAsync("go")
		waitStarted(t, b.started)
		for _, id := range []llm.CallID{"c1", "c2"} {
			if err := h.a.CancelTool(id, "late"); !errors.Is(err, agent.ErrCallFinished) {
				t.Errorf("CancelTool of %s, a call of an earlier step = %v", id, err)
			}
		}
		if err := h.a.CancelTool("c9", "early"); err != nil {
			t.Errorf("CancelTool of a call not made yet = %v", err)
		}
		close(b.release)
		<-done
		if got := resultText(results(h.events())["c3"]); got == "" {
			t.Error("c3 has no result")
		}
	})
}

func TestB25_SteerAndFollowUpRefusedAfterCancel(t *testing.T) {
	h, g, done := cancelStubborn(t, "work", 5*time.Second)
	if h.a.Steer(text("x")) || h.a.FollowUp(text("y")) {
		t.Error("Steer or FollowUp accepted after cancel")
	}
	close(g.release)
	<-done
	evs := h.events()
	if len(ofType[*session.SteeringMessage](evs)) != 0 {
		t.Error("a steer was recorded after cancel")
	}
}

func TestB26_CancelBeatsPendingRetry(t *testing.T) {
	sleeping := make(chan struct{})
	h := newHarness(t, &agent.Options{Sleep: func(ctx context.Context, d time.Duration) error {
		close(sleeping)
		<-ctx.Done()
		return ctx.Err()
	}}, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529, RetryAfter: time.Hour}), llmtest.Reply("never"))
	done := h.runAsync("go")
	<-sleeping
	h.a.Cancel("user")
	<-done
	if n := h.m.Calls(); n != 1 {
		t.Errorf("model called %d times; no request may follow a cancel", n)
	}
	if end := lastEnd(t, h.events()); end.Reason != session.EndAborted {
		t.Errorf("end = %+v", end)
	}
}

func TestB22_CancelFirstCauseWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, done := hungRun(t, context.Background())
		if !h.a.Cancel("hook") {
			t.Fatal("Cancel found no run")
		}
		h.a.Cancel("user")
		out := <-done
		if out.res.Cause != "hook" || lastEnd(t, h.events()).Cause != "hook" {
			t.Errorf("cause = %q", out.res.Cause)
		}
		if h.a.Cancel("user") {
			t.Error("Cancel while idle reported a run")
		}
	})
}

func TestStreamEndsWithRunError(t *testing.T) {
	h := newHarness(t, nil, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 401, Message: "invalid x-api-key"}))
	var last error
	n := 0
	for ev, err := range h.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go"}) {
		if err != nil {
			last = err
			continue
		}
		n++
		_ = ev
	}
	if llm.KindOf(last) != llm.ErrAuth || n != len(h.events()) {
		t.Errorf("last error %v after %d events", last, n)
	}
}

func TestConstructorErrors(t *testing.T) {
	if _, err := agent.New(nil); !errors.Is(err, agent.ErrNoModel) {
		t.Errorf("New(nil) = %v", err)
	}
	m := llmtest.NewModel()
	if _, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{echoTool(), echoTool()}}); err == nil {
		t.Error("two tools with one name were accepted")
	}
	a, err := agent.New(&agent.Options{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Run(context.Background(), &agent.RunRequest{}); !errors.Is(err, agent.ErrEmptyPrompt) {
		t.Errorf("empty prompt: %v", err)
	}
	if err := a.CancelTool("x", ""); !errors.Is(err, agent.ErrIdle) {
		t.Errorf("CancelTool while idle: %v", err)
	}
}

func TestB18_SteerAcceptedBeforeCancelIsRecorded(t *testing.T) {
	g := newGateTool("work")
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}}, llmtest.CallTool("c1", "work", `{}`))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	if !h.a.Steer(text("use the other approach")) {
		t.Fatal("Steer refused")
	}
	h.a.Cancel("user")
	<-done
	evs := h.events()
	sm := ofType[*session.SteeringMessage](evs)
	if len(sm) != 1 || partsText(sm[0].Parts) != "use the other approach" {
		t.Errorf("the accepted steer was lost:\n%s", dump(evs))
	}
}
