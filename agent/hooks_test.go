package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func promptHook(tr *trace, name string) hook.PromptFunc {
	return func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
		tr.add(name)
		return nil, nil
	}
}

func TestB34_AgentHandlersThenRunHandlers(t *testing.T) {
	tr := &trace{}
	agentSet := new(hook.Set).Prompt("a1", promptHook(tr, "a1")).Prompt("a2", promptHook(tr, "a2"))
	h := newHarness(t, &agent.Options{Hooks: agentSet}, llmtest.Reply("1"), llmtest.Reply("2"))
	runSet := new(hook.Set).Prompt("r1", promptHook(tr, "r1"))
	if _, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "x", Hooks: runSet}); err != nil {
		t.Fatal(err)
	}
	h.run("y") // the run-level handler is gone
	want := []string{"a1", "a2", "r1", "a1", "a2"}
	if diff := cmp.Diff(want, tr.get()); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestB35_EditFeedsNextDenyEndsChain(t *testing.T) {
	var seen []string
	hs := new(hook.Set).
		Prompt("redact", func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
			return &hook.EditPrompt{Parts: []llm.Part{text(strings.ReplaceAll(partsText(in.Parts), "secret@example.com", "[email]"))}}, nil
		}).
		Prompt("see", func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
			seen = append(seen, partsText(in.Parts))
			return nil, nil
		})
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.Reply("ok"))
	h.run("mail secret@example.com")
	if diff := cmp.Diff([]string{"mail [email]"}, seen); diff != "" {
		t.Errorf("next handler saw (-want +got):\n%s", diff)
	}
	if got := requestTexts(h.m.Requests()[0]); got[0] != "user: mail [email]" {
		t.Errorf("model saw %v", got)
	}
	// A deny ends the chain.
	called := false
	hs2 := new(hook.Set).
		ToolGate("deny", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.Deny{Reason: "no"}, nil
		}).
		ToolGate("after", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { called = true; return nil, nil })
	h2 := newHarness(t, &agent.Options{Hooks: hs2, Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("ok"))
	h2.run("go")
	h2.events()
	if called {
		t.Error("a handler after a deny ran")
	}
}

func TestB36_HookErrorFailsToolClosed(t *testing.T) {
	ran := false
	hs := new(hook.Set).ToolGate("policy", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if in.Call.Name == "danger" {
			panic("policy crashed")
		}
		return nil, nil
	})
	danger := funcTool("danger", func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("x"), nil })
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{danger, echoTool()}},
		llmtest.CallTools(call("c1", "danger", `{}`), call("c2", "echo", `{"text":"fine"}`)), llmtest.Reply("ok"))
	res := h.run("go")
	rs := results(h.events())
	if ran || !strings.Contains(resultText(rs["c1"]), `hook "policy"`) || rs["c1"].Code != agent.CodeHookError {
		t.Errorf("ran=%v c1=%q", ran, resultText(rs["c1"]))
	}
	if resultText(rs["c2"]) != "fine" || res.Reason != session.EndCompleted {
		t.Errorf("the run's other work was affected: c2=%q end=%s", resultText(rs["c2"]), res.Reason)
	}
}

func TestB36_PromptHookPanicFailsClosed(t *testing.T) {
	hs := new(hook.Set).Prompt("scanner", func(context.Context, *hook.PromptInput) (hook.PromptDecision, error) { panic("scanner down") })
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.Reply("never"))
	_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	var he *hook.Error
	if !errors.As(err, &he) || he.Hook != "scanner" || he.Point != hook.PointPrompt {
		t.Fatalf("err = %v, want a *hook.Error naming scanner", err)
	}
	if h.m.Calls() != 0 {
		t.Error("the prompt reached the model")
	}
	evs := h.events()
	if len(ofType[*session.UserMessage](evs)) != 0 || len(ofType[*session.PromptBlocked](evs)) != 1 {
		t.Errorf("log:\n%s", dump(evs))
	}
}

func TestB37_HookCallsDoNotReenterChain(t *testing.T) {
	var gates atomic.Int32
	hs := new(hook.Set)
	var sub *agent.Agent
	hs.ToolGate("review", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		gates.Add(1)
		// The hook asks a reviewer agent sharing these hooks; its own tool
		// calls must not run this gate again.
		res, err := sub.Run(ctx, &agent.RunRequest{Prompt: "review " + in.Call.Name})
		if err != nil {
			return nil, err
		}
		if res.Text != "approved" {
			return &hook.Deny{Reason: res.Text}, nil
		}
		return nil, nil
	})
	subModel := llmtest.NewModel(llmtest.CallTool("s1", "echo", `{"text":"look"}`), llmtest.Reply("approved"))
	var err error
	sub, err = agent.New(&agent.Options{Model: subModel, Hooks: hs, Tools: []tool.Tool{echoTool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "echo", `{"text":"main"}`), llmtest.Reply("ok"))
	h.run("go")
	if n := gates.Load(); n != 1 {
		t.Errorf("gate ran %d times, want 1", n)
	}
	if got := resultText(results(h.events())["c1"]); got != "main" {
		t.Errorf("c1 = %q", got)
	}
}

func TestB38_DeniedPromptNeverReachesModel(t *testing.T) {
	hs := new(hook.Set).Prompt("pii", func(context.Context, *hook.PromptInput) (hook.PromptDecision, error) {
		return &hook.Deny{Reason: "contains a card number"}, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.Reply("never"))
	res := h.run("4111 1111 1111 1111")
	evs := h.events()
	if h.m.Calls() != 0 || res.Reason != session.EndBlocked {
		t.Fatalf("calls=%d end=%s", h.m.Calls(), res.Reason)
	}
	want := []string{"turn.start", "hook.decision", "prompt.blocked", "turn.end"}
	if diff := cmp.Diff(want, types(evs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	pb := ofType[*session.PromptBlocked](evs)[0]
	if pb.Reason != "contains a card number" || pb.Hook != "pii" {
		t.Errorf("prompt.blocked = %+v", pb)
	}
}

func TestB39_BeforeStepReplacesRequest(t *testing.T) {
	hs := new(hook.Set).Request("temp", func(_ context.Context, in *hook.RequestInput) (hook.RequestDecision, error) {
		r := *in.Request
		r.System = []llm.Text{{Text: "Answer in French."}}
		return &hook.ReplaceRequest{Request: &r}, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs, System: "Answer in English."}, llmtest.Reply("oui"))
	h.run("hi")
	if got := h.m.Requests()[0].System[0].Text; got != "Answer in French." {
		t.Errorf("system = %q", got)
	}
	if len(ofType[*session.HookDecision](h.events())) != 1 {
		t.Error("the replace was not recorded")
	}
}

func TestB39_RewriteMessagesIsPerRequest(t *testing.T) {
	step := 0
	hs := new(hook.Set).Request("trim", func(_ context.Context, in *hook.RequestInput) (hook.RequestDecision, error) {
		step++
		if step == 1 {
			return &hook.RewriteMessages{Messages: []llm.Message{llm.UserText("rewritten")}}, nil
		}
		return nil, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("ok"))
	h.run("original")
	reqs := h.m.Requests()
	if got := requestTexts(reqs[0]); !cmp.Equal(got, []string{"user: rewritten"}) {
		t.Errorf("first request = %v", got)
	}
	if got := requestTexts(reqs[1]); got[0] != "user: original" {
		t.Errorf("second request = %v; the log must be untouched", got)
	}
	evs := h.events()
	if um := ofType[*session.UserMessage](evs)[0]; partsText(um.Parts) != "original" {
		t.Errorf("logged prompt = %q", partsText(um.Parts))
	}
}

func TestB39_StopWithFinalAnswer(t *testing.T) {
	hs := new(hook.Set).Request("cache", func(context.Context, *hook.RequestInput) (hook.RequestDecision, error) {
		return &hook.Stop{Answer: "from cache", Reason: "cache hit"}, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.Reply("never"))
	res := h.run("q")
	if h.m.Calls() != 0 || res.Text != "from cache" || res.Reason != session.EndCompleted {
		t.Errorf("calls=%d text=%q end=%s", h.m.Calls(), res.Text, res.Reason)
	}
	h.events()
}

func TestB40_FinalizeContinuationCountsAsStep(t *testing.T) {
	hs := new(hook.Set).Finalize("never-done", func(context.Context, *hook.FinalizeInput) (hook.FinalizeDecision, error) {
		return &hook.Nudge{Text: "Are you sure? Check again."}, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs, Limits: agent.Limits{MaxSteps: 3}},
		llmtest.Reply("a"), llmtest.Reply("b"), llmtest.Reply("c"), llmtest.Reply("d"))
	res := h.run("go")
	evs := h.events()
	if res.Reason != session.EndMaxSteps || res.Steps != 3 || h.m.Calls() != 3 {
		t.Errorf("end=%s steps=%d calls=%d", res.Reason, res.Steps, h.m.Calls())
	}
	nudges := 0
	for _, um := range ofType[*session.UserMessage](evs) {
		if um.Source == session.SourceHook {
			nudges++
		}
	}
	if nudges != 3 {
		t.Errorf("nudges = %d", nudges)
	}
}

func TestB40_FinalizeStopEndsTurn(t *testing.T) {
	var h *harness
	hs := new(hook.Set).Finalize("stop", func(context.Context, *hook.FinalizeInput) (hook.FinalizeDecision, error) {
		return &hook.Stop{Reason: "enough"}, nil
	})
	h = newHarness(t, &agent.Options{Hooks: hs}, llmtest.Respond(func(*llm.Request) llmtest.Entry {
		h.a.FollowUp(text("more"))
		return llmtest.Reply("done")
	}))
	if res := h.run("go"); res.Steps != 1 || res.Reason != session.EndCompleted {
		t.Errorf("steps=%d end=%s", res.Steps, res.Reason)
	}
	h.events()
}

func TestB41_EveryNonContinueDecisionIsRecorded(t *testing.T) {
	hs := new(hook.Set).
		Prompt("noop", func(context.Context, *hook.PromptInput) (hook.PromptDecision, error) { return nil, nil }).
		Prompt("edit", func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
			return &hook.EditPrompt{Parts: in.Parts}, nil
		}).
		ToolGate("args", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.EditArgs{Args: in.Call.Args}, nil
		}).
		ToolResult("rw", func(_ context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
			return &hook.RewriteResult{Result: in.Result}, nil
		}).
		StepEnd("cont", func(context.Context, *hook.StepEndInput) (hook.StepEndDecision, error) { return nil, nil })
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("ok"))
	h.run("go")
	var got []string
	for _, d := range ofType[*session.HookDecision](h.events()) {
		got = append(got, d.Point+"/"+d.Hook+"/"+d.Decision+"/"+string(d.CallID))
	}
	want := []string{"prompt/edit/edit/", "tool-gate/args/edit/c1", "tool-result/rw/rewrite/c1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestB42_ObserversSeeEventsInSeqOrder(t *testing.T) {
	var mu sync.Mutex
	var seqs []int64
	var results []string
	hs := new(hook.Set).
		Observe("all", "*", func(ev session.Event) { mu.Lock(); seqs = append(seqs, ev.Seq); mu.Unlock() }).
		Observe("results", session.TypeToolResult, func(ev session.Event) {
			mu.Lock()
			results = append(results, string(ev.Data.(*session.ToolResult).CallID))
			mu.Unlock()
		})
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	h.a.Close() // drains observers
	mu.Lock()
	defer mu.Unlock()
	if len(seqs) != len(evs) {
		t.Fatalf("observer saw %d events, log has %d", len(seqs), len(evs))
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("observer order: %v", seqs)
		}
	}
	if diff := cmp.Diff([]string{"c1"}, results); diff != "" {
		t.Errorf("typed subscription (-want +got):\n%s", diff)
	}
}

func TestB42_PanickingObserverIsReported(t *testing.T) {
	hs := new(hook.Set).Observe("bad", session.TypeStepEnd, func(session.Event) { panic("observer bug") })
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.Reply("ok"))
	if res := h.run("go"); res.Reason != session.EndCompleted {
		t.Errorf("end = %s", res.Reason)
	}
	h.events()
	h.a.Close()
	st := h.a.ObserverStats()
	if len(st) != 1 || st[0].Panics != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestB42_SlowObserverDropsAndNeverStalls(t *testing.T) {
	release := make(chan struct{})
	hs := new(hook.Set).Observe("slow", "*", func(session.Event) { <-release })
	h := newHarness(t, &agent.Options{Hooks: hs, ObserverBuffer: 2}, llmtest.Reply("ok"))
	done := make(chan struct{})
	ran := make(chan *agent.Result, 1)
	go func() { ran <- h.run("go"); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a slow observer stalled the loop")
	}
	close(release)
	h.a.Close()
	if res := <-ran; res.ObserverDrops == 0 {
		t.Error("the run did not report the drops")
	}
	st := h.a.ObserverStats()
	if st[0].Dropped == 0 || st[0].Delivered+st[0].Dropped != int64(len(h.events())) {
		t.Errorf("stats = %+v for %d events", st, len(h.events()))
	}
}

func TestB38_FollowUpsAndSteersPassThePromptGate(t *testing.T) {
	var sources []string
	hs := new(hook.Set).Prompt("pii", func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
		sources = append(sources, in.Source)
		if strings.Contains(partsText(in.Parts), "password") {
			return &hook.Deny{Reason: "secret"}, nil
		}
		return nil, nil
	})
	var h *harness
	h = newHarness(t, &agent.Options{Hooks: hs}, llmtest.Respond(func(*llm.Request) llmtest.Entry {
		h.a.FollowUp(text("my password is hunter2"))
		return llmtest.Reply("first")
	}), llmtest.Reply("never"))
	res := h.run("hello")
	evs := h.events()
	if res.Steps != 1 || h.m.Calls() != 1 {
		t.Errorf("steps=%d calls=%d; a denied follow-up must not start a step", res.Steps, h.m.Calls())
	}
	if diff := cmp.Diff([]string{"user", "follow-up"}, sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if pb := ofType[*session.PromptBlocked](evs); len(pb) != 1 || pb[0].Reason != "secret" {
		t.Errorf("prompt.blocked = %+v", pb)
	}
}

func TestB42_ChunkObserversSeeStreamDeltas(t *testing.T) {
	var mu sync.Mutex
	var got string
	all := 0
	hs := new(hook.Set).
		Observe("typing", session.TypeAssistantChunk, func(ev session.Event) {
			mu.Lock()
			got += ev.Data.(*session.AssistantChunk).Deltas[0].Text
			mu.Unlock()
		}).
		Observe("log", "*", func(ev session.Event) {
			mu.Lock()
			if ev.Seq == 0 {
				t.Error("a \"*\" observer saw a transient delta")
			}
			all++
			mu.Unlock()
		})
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.Chunks(&llm.TextDelta{Text: "ty"}, &llm.TextDelta{Text: "ping"}, &llm.Finish{Reason: llm.FinishStop}))
	h.run("go")
	n := len(h.events())
	h.a.Close()
	mu.Lock()
	defer mu.Unlock()
	if got != "typing" || all != n {
		t.Errorf("deltas %q, logged events seen %d of %d", got, all, n)
	}
}

func TestStepEndStopEndsTurn(t *testing.T) {
	hs := new(hook.Set).StepEnd("one-step", func(_ context.Context, in *hook.StepEndInput) (hook.StepEndDecision, error) {
		if in.Step >= 1 {
			return &hook.Stop{Reason: "one step is enough"}, nil
		}
		return nil, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("never"))
	res := h.run("go")
	evs := h.events()
	if res.Reason != session.EndBlocked || h.m.Calls() != 1 || lastEnd(t, evs).Message != "one step is enough" {
		t.Errorf("end=%s calls=%d\n%s", res.Reason, h.m.Calls(), dump(evs))
	}
	if len(results(evs)) != 1 {
		t.Error("the step's results were not kept")
	}
}

func TestB41_HandlerNotesReachTheLog(t *testing.T) {
	detail := []byte(`{"command":"./guard.sh","exit_code":1}`)
	hs := new(hook.Set).ToolGate("guard", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if !hook.Note(ctx, &session.HookDecision{Point: string(hook.PointToolGate), Hook: "./guard.sh", Decision: "error", Reason: "exit status 1", CallID: in.Call.ID, Detail: detail}) {
			t.Error("Note found no run to record on")
		}
		return nil, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{echoTool()}},
		llmtest.CallTool("c1", "echo", `{"text":"hi"}`), llmtest.Reply("done"))
	h.run("go")
	var notes []*session.HookDecision
	for _, d := range ofType[*session.HookDecision](h.events()) {
		if d.Hook == "./guard.sh" {
			notes = append(notes, d)
		}
	}
	if len(notes) != 1 || notes[0].CallID != "c1" || string(notes[0].Detail) != string(detail) {
		t.Fatalf("notes on the log = %+v, want the guard's one note for c1", notes)
	}
	if hook.Note(context.Background(), &session.HookDecision{}) {
		t.Error("Note outside a run reported true")
	}
}
