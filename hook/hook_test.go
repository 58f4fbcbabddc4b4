package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func text(s string) []llm.Part { return []llm.Part{&llm.Text{Text: s}} }

func partsText(ps []llm.Part) string {
	m := llm.Message{Parts: ps}
	return m.Text()
}

func TestChainOrderAgentThenRun(t *testing.T) {
	var order []string
	mk := func(name string) hook.PromptFunc {
		return func(context.Context, *hook.PromptInput) (hook.PromptDecision, error) {
			order = append(order, name)
			return nil, nil
		}
	}
	agentSet := new(hook.Set).Prompt("a1", mk("a1")).Prompt("a2", mk("a2"))
	runSet := new(hook.Set).Prompt("r1", mk("r1"))
	out, err := hook.Prompt.Run(context.Background(), hook.Join(agentSet, runSet), &hook.PromptInput{Parts: text("x")})
	if err != nil || len(out.Records) != 0 {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "r1"}, order); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPromptEditFeedsNextAndDenyEnds(t *testing.T) {
	var seen []string
	var after bool
	s := new(hook.Set).
		Prompt("upper", func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
			return &hook.EditPrompt{Parts: text(partsText(in.Parts) + "!")}, nil
		}).
		Prompt("look", func(_ context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
			seen = append(seen, partsText(in.Parts))
			return &hook.Deny{Reason: "no shouting"}, nil
		}).
		Prompt("after", func(context.Context, *hook.PromptInput) (hook.PromptDecision, error) { after = true; return nil, nil })
	out, err := hook.Prompt.Run(context.Background(), hook.Join(s, nil), &hook.PromptInput{Parts: text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"hi!"}, seen); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if after || out.Denied == nil || out.Hook != "look" || out.Denied.Reason != "no shouting" {
		t.Errorf("after=%v out=%+v", after, out)
	}
	want := []hook.Record{{Point: hook.PointPrompt, Hook: "upper", Decision: "edit"}, {Point: hook.PointPrompt, Hook: "look", Decision: "deny", Reason: "no shouting"}}
	if diff := cmp.Diff(want, out.Records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

func TestGateDenyWinsOverSubstitute(t *testing.T) {
	s := new(hook.Set).
		ToolGate("sub", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.Substitute{Result: tool.Text("cached")}, nil
		}).
		ToolGate("edit", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.EditArgs{Args: json.RawMessage(`{"x":2}`)}, nil
		}).
		ToolGate("deny", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
			if string(in.Call.Args) != `{"x":2}` {
				t.Errorf("deny saw %s; the edit should feed it", in.Call.Args)
			}
			return &hook.Deny{Reason: "no"}, nil
		})
	out, err := hook.ToolGate.Run(context.Background(), hook.Join(s, nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c", Name: "t", Args: json.RawMessage(`{"x":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Denied == nil || out.Substitute != nil || out.Hook != "deny" {
		t.Errorf("out = %+v", out)
	}
}

func TestHandlerErrorAndPanicAreHookErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   hook.GateFunc
		want string
	}{
		{"error", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { return nil, errors.New("db down") }, "db down"},
		{"panic", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { panic("oops") }, "panic: oops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := new(hook.Set).ToolGate("policy", tt.fn)
			_, err := hook.ToolGate.Run(context.Background(), hook.Join(nil, s), &hook.ToolInput{})
			var he *hook.Error
			if !errors.As(err, &he) || he.Hook != "policy" || he.Point != hook.PointToolGate || he.Err.Error() != tt.want {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

func TestNoReentryIntoRunningChain(t *testing.T) {
	calls := 0
	var c hook.Chain
	s := new(hook.Set).ToolGate("g", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		calls++
		if !hook.Within(ctx, hook.PointToolGate) {
			t.Error("Within is false inside the chain")
		}
		// Work started by the hook dispatches the same point: skipped.
		if _, err := hook.ToolGate.Run(ctx, c, in); err != nil {
			return nil, err
		}
		// Another point still runs.
		if _, err := hook.Prompt.Run(ctx, c, &hook.PromptInput{}); err != nil {
			return nil, err
		}
		return nil, nil
	})
	prompts := 0
	s.Prompt("p", func(context.Context, *hook.PromptInput) (hook.PromptDecision, error) { prompts++; return nil, nil })
	c = hook.Join(s, nil)
	if _, err := hook.ToolGate.Run(context.Background(), c, &hook.ToolInput{}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || prompts != 1 {
		t.Errorf("gate ran %d times, prompt %d", calls, prompts)
	}
}

func TestRequestRewriteCopies(t *testing.T) {
	orig := &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("a")}}
	s := new(hook.Set).Request("rw", func(context.Context, *hook.RequestInput) (hook.RequestDecision, error) {
		return &hook.RewriteMessages{Messages: []llm.Message{llm.UserText("b")}}, nil
	})
	out, err := hook.Request.Run(context.Background(), hook.Join(s, nil), &hook.RequestInput{Request: orig})
	if err != nil {
		t.Fatal(err)
	}
	if out.Request == orig || orig.Messages[0].Text() != "a" || out.Request.Messages[0].Text() != "b" || out.Request.Model != "m" {
		t.Errorf("rewrite changed the input or lost fields: %+v", out.Request)
	}
}

func TestApprovalStrictestWins(t *testing.T) {
	allow := func(context.Context, *hook.ToolInput) (hook.ApprovalDecision, error) { return &hook.Allow{}, nil }
	ask := func(context.Context, *hook.ToolInput) (hook.ApprovalDecision, error) {
		return &hook.Ask{Reason: "writes"}, nil
	}
	s := new(hook.Set).Approval("allow", allow).Approval("ask", ask).Approval("allow2", allow)
	out, err := hook.Approval.Run(context.Background(), hook.Join(s, nil), &hook.ToolInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Decision.(*hook.Ask); !ok || out.Hook != "ask" {
		t.Errorf("decision = %#v from %s", out.Decision, out.Hook)
	}
}

func TestFinalizeAndStepEnd(t *testing.T) {
	s := new(hook.Set).
		Finalize("nudge", func(context.Context, *hook.FinalizeInput) (hook.FinalizeDecision, error) {
			return &hook.Nudge{Text: "go on"}, nil
		}).
		StepEnd("stop", func(context.Context, *hook.StepEndInput) (hook.StepEndDecision, error) {
			return &hook.Stop{Reason: "done"}, nil
		})
	c := hook.Join(s, nil)
	f, _ := hook.Finalize.Run(context.Background(), c, &hook.FinalizeInput{})
	e, _ := hook.StepEnd.Run(context.Background(), c, &hook.StepEndInput{})
	if f.Nudge == nil || f.Nudge.Text != "go on" || e.Stop == nil || e.Stop.Reason != "done" {
		t.Errorf("finalize=%+v stepEnd=%+v", f, e)
	}
}

func TestTypedNilDecisionIsContinue(t *testing.T) {
	s := new(hook.Set).ToolGate("nil", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
		var d *hook.Deny
		return d, nil
	})
	out, err := hook.ToolGate.Run(context.Background(), hook.Join(s, nil), &hook.ToolInput{})
	if err != nil || out.Denied != nil || len(out.Records) != 0 {
		t.Errorf("out=%+v err=%v", out, err)
	}
}

func TestNotificationsTellEveryHandler(t *testing.T) {
	var got []string
	s := new(hook.Set).
		PostTool("bad", func(context.Context, *hook.PostToolInput) error { panic("x") }).
		PostTool("good", func(_ context.Context, in *hook.PostToolInput) error { got = append(got, in.ErrorType); return nil })
	_, err := hook.PostTool.Run(context.Background(), hook.Join(s, nil), &hook.PostToolInput{Failed: true, ErrorType: "panic"})
	var he *hook.Error
	if !errors.As(err, &he) || he.Hook != "bad" {
		t.Errorf("err = %v", err)
	}
	if diff := cmp.Diff([]string{"panic"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBusDeliversInOrderAndCountsDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hook.NewBus(&hook.BusOptions{Buffer: 4})
		var mu sync.Mutex
		var seqs []int64
		b.Subscribe(hook.Subscription{Name: "all", Type: "*", Fn: func(ev session.Event) {
			mu.Lock()
			seqs = append(seqs, ev.Seq)
			mu.Unlock()
		}})
		release := make(chan struct{})
		b.Subscribe(hook.Subscription{Name: "slow", Type: session.TypeTurnStart, Fn: func(session.Event) { <-release }})
		start := time.Now()
		for i := 1; i <= 100; i++ {
			b.Publish(session.Event{Seq: int64(i), Data: &session.TurnStart{}})
			if i%4 == 0 {
				synctest.Wait() // the fast observer has drained its buffer; the slow one holds
			}
		}
		if time.Since(start) > 2*time.Second {
			t.Error("Publish blocked on a slow observer")
		}
		close(release)
		b.Close()
		st := b.Stats()
		if st[1].Name != "slow" || st[1].Dropped == 0 || st[1].Delivered+st[1].Dropped != 100 {
			t.Errorf("slow stats = %+v", st[1])
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("out of order: %v", seqs)
			}
		}
	})
}

func TestBusRecoversPanics(t *testing.T) {
	var reported []string
	var mu sync.Mutex
	b := hook.NewBus(&hook.BusOptions{OnPanic: func(name string, v any) {
		mu.Lock()
		reported = append(reported, fmt.Sprint(name, ":", v))
		mu.Unlock()
	}})
	n := 0
	b.Subscribe(hook.Subscription{Name: "flaky", Fn: func(ev session.Event) {
		n++
		if ev.Seq == 2 {
			panic("bad event")
		}
	}})
	for i := 1; i <= 3; i++ {
		b.Publish(session.Event{Seq: int64(i), Data: &session.TurnStart{}})
	}
	b.Close()
	if n != 3 || len(reported) != 1 || reported[0] != "flaky:bad event" {
		t.Errorf("delivered %d, reported %v", n, reported)
	}
	if st := b.Stats()[0]; st.Panics != 1 || st.Delivered != 2 {
		t.Errorf("stats = %+v", st)
	}
}

func TestBusUnsubscribeAndCloseAreIdempotent(t *testing.T) {
	b := hook.NewBus(nil)
	un := b.Subscribe(hook.Subscription{Name: "x", Fn: func(session.Event) {}})
	un()
	un()
	b.Publish(session.Event{Seq: 1, Data: &session.TurnStart{}})
	b.Close()
	b.Close()
	if un := b.Subscribe(hook.Subscription{Name: "late", Fn: func(session.Event) {}}); un == nil {
		t.Error("Subscribe after Close returned nil")
	}
}

func BenchmarkDispatch(b *testing.B) {
	in := &hook.ToolInput{Call: llm.ToolCall{ID: "c", Name: "t", Args: json.RawMessage(`{}`)}}
	for _, n := range []int{0, 10} {
		s := new(hook.Set)
		for i := range n {
			s.ToolGate(fmt.Sprint("h", i), func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { return nil, nil })
		}
		c := hook.Join(s, nil)
		b.Run(fmt.Sprint(n, "handlers"), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := hook.ToolGate.Run(ctx, c, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPublishNoObservers(b *testing.B) {
	bus := hook.NewBus(nil)
	defer bus.Close()
	ev := session.Event{Seq: 1, Data: &session.TurnStart{}}
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(ev)
	}
}

func ExampleSet() {
	hs := new(hook.Set).ToolGate("no-rm", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if in.Call.Name == "shell" {
			return &hook.Deny{Reason: "no shell in this demo"}, nil
		}
		return nil, nil
	})
	out, _ := hook.ToolGate.Run(context.Background(), hook.Join(hs, nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c1", Name: "shell"}})
	fmt.Println(out.Denied.Reason, "by", out.Hook)
	// Output: no shell in this demo by no-rm
}

func TestResultRewritesFeedEachOther(t *testing.T) {
	s := new(hook.Set).
		ToolResult("a", func(_ context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
			return &hook.RewriteResult{Result: tool.Text(partsText(in.Result.Parts) + "a")}, nil
		}).
		ToolResult("b", func(_ context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
			return &hook.RewriteResult{Result: tool.Text(partsText(in.Result.Parts) + "b")}, nil
		})
	out, err := hook.ToolResult.Run(context.Background(), hook.Join(nil, s), &hook.ToolResultInput{Result: tool.Text(">")})
	if err != nil || partsText(out.Result.Parts) != ">ab" || len(out.Records) != 2 {
		t.Errorf("out=%+v err=%v", out, err)
	}
}

func TestSubstituteChainsStopAtFirst(t *testing.T) {
	second := false
	s := new(hook.Set).
		ToolError("first", func(context.Context, *hook.ToolErrorInput) (hook.SubstituteDecision, error) {
			return &hook.Substitute{Result: tool.Text("friendly"), Reason: "known flake"}, nil
		}).
		ToolError("second", func(context.Context, *hook.ToolErrorInput) (hook.SubstituteDecision, error) {
			second = true
			return nil, nil
		}).
		UnknownTool("alias", func(_ context.Context, in *hook.UnknownToolInput) (hook.SubstituteDecision, error) {
			return &hook.Substitute{Result: tool.Text("try " + in.Call.Name + "_v2")}, nil
		})
	c := hook.Join(s, nil)
	eo, err := hook.ToolError.Run(context.Background(), c, &hook.ToolErrorInput{Err: errors.New("x")})
	if err != nil || eo.Hook != "first" || second || eo.Records[0].Reason != "known flake" {
		t.Errorf("tool error: %+v %v second=%v", eo, err, second)
	}
	uo, err := hook.UnknownTool.Run(context.Background(), c, &hook.UnknownToolInput{Call: llm.ToolCall{Name: "grep"}})
	if err != nil || partsText(uo.Substitute.Result.Parts) != "try grep_v2" {
		t.Errorf("unknown tool: %+v %v", uo, err)
	}
}

func TestRequestReplaceThenStop(t *testing.T) {
	replaced := &llm.Request{Model: "small"}
	var saw string
	s := new(hook.Set).
		Request("route", func(context.Context, *hook.RequestInput) (hook.RequestDecision, error) {
			return &hook.ReplaceRequest{Request: replaced}, nil
		}).
		Request("cache", func(_ context.Context, in *hook.RequestInput) (hook.RequestDecision, error) {
			saw = in.Request.Model
			return &hook.Stop{Answer: "cached", Reason: "hit"}, nil
		})
	out, err := hook.Request.Run(context.Background(), hook.Join(s, nil), &hook.RequestInput{Request: &llm.Request{Model: "big"}})
	if err != nil || saw != "small" || out.Stop == nil || out.Stop.Answer != "cached" || out.Hook != "cache" {
		t.Errorf("out=%+v saw=%q err=%v", out, saw, err)
	}
}

func TestPreToolUseIsItsOwnPoint(t *testing.T) {
	s := new(hook.Set).PreToolUse("p", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if !in.Validated {
			t.Error("pre-tool-use input not marked validated")
		}
		return &hook.EditArgs{Args: json.RawMessage(`{"n":2}`)}, nil
	})
	c := hook.Join(s, nil)
	if c.Has(hook.ToolGate) || !c.Has(hook.PreToolUse) {
		t.Error("Has mixes the gate and pre-tool-use points")
	}
	if out, _ := hook.ToolGate.Run(context.Background(), c, &hook.ToolInput{}); out.Args != nil {
		t.Error("the gate ran a pre-tool-use handler")
	}
	out, err := hook.PreToolUse.Run(context.Background(), c, &hook.ToolInput{Validated: true})
	if err != nil || string(out.Args) != `{"n":2}` || out.Records[0].Point != hook.PointPreToolUse {
		t.Errorf("out=%+v err=%v", out, err)
	}
}

func TestErrorMessageNamesHookAndPoint(t *testing.T) {
	e := &hook.Error{Point: hook.PointApproval, Hook: "policy", Err: errors.New("timeout")}
	want := `hook "policy" at approval failed: timeout; the approval boundary was failed closed`
	if e.Error() != want || !errors.Is(e, e.Err) {
		t.Errorf("Error() = %q", e.Error())
	}
	if hook.Within(context.Background(), hook.PointApproval) {
		t.Error("Within is true outside any chain")
	}
}
