package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

func TestB01_SimpleTurnBoundaryOrder(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("hello"))
	res := h.run("hi")
	if res.Text != "hello" || res.Reason != session.EndCompleted {
		t.Fatalf("result = %q %s, want hello completed", res.Text, res.Reason)
	}
	want := []string{"turn.start", "user.message", "step.start", "request.header", "assistant.message", "step.end", "turn.end"}
	if diff := cmp.Diff(want, types(h.events())); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

func TestB06_ToolRoundTrip(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}},
		llmtest.CallTool("c1", "echo", `{"text":"pong"}`),
		llmtest.Reply("done"))
	res := h.run("ping")
	evs := h.events()
	want := []string{"turn.start", "user.message", "step.start", "request.header", "assistant.message", "tool.call", "tool.result", "step.end",
		"step.start", "assistant.message", "step.end", "turn.end"}
	if diff := cmp.Diff(want, types(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s\n%s", diff, dump(evs))
	}
	if res.Steps != 2 || res.Text != "done" {
		t.Errorf("steps=%d text=%q", res.Steps, res.Text)
	}
	reqs := h.m.Requests()
	if !containsText(reqs[1], "result c1: pong") {
		t.Errorf("second request lacks the result: %v", requestTexts(reqs[1]))
	}
	_ = context.Background
}

func TestB02_BalancedOnEveryExit(t *testing.T) {
	hang := llmtest.Hang()
	tests := []struct {
		name   string
		opts   func(*agent.Options)
		script []llmtest.Entry
		during func(h *harness)
		want   session.EndReason
	}{
		{name: "completion", script: []llmtest.Entry{llmtest.Reply("ok")}, want: session.EndCompleted},
		{name: "step limit", opts: func(o *agent.Options) { o.Limits.MaxSteps = 1; o.Tools = []tool.Tool{echoTool()} },
			script: []llmtest.Entry{llmtest.CallTool("c1", "echo", `{"text":"x"}`)}, want: session.EndMaxSteps},
		{name: "budget", opts: func(o *agent.Options) { o.Limits.MaxTokens = 1; o.Tools = []tool.Tool{echoTool()} },
			script: []llmtest.Entry{llmtest.CallTool("c1", "echo", `{"text":"x"}`)}, want: session.EndBudget},
		{name: "cancel", script: []llmtest.Entry{hang}, during: func(h *harness) { waitCalls(h, 1); h.a.Cancel("user") }, want: session.EndAborted},
		{name: "provider error", script: []llmtest.Entry{llmtest.Fail(&llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 401})}, want: session.EndError},
		{name: "hook error", opts: func(o *agent.Options) {
			o.Hooks = new(hook.Set).Request("bad", func(context.Context, *hook.RequestInput) (hook.RequestDecision, error) { return nil, errBoom })
		}, script: []llmtest.Entry{llmtest.Reply("never")}, want: session.EndError},
		{name: "panicking observer", opts: func(o *agent.Options) {
			o.Hooks = new(hook.Set).Observe("bad", "*", func(session.Event) { panic("observer") })
		}, script: []llmtest.Entry{llmtest.Reply("ok")}, want: session.EndCompleted},
		{name: "close mid-turn", script: []llmtest.Entry{hang}, during: func(h *harness) { waitCalls(h, 1); h.a.Close() }, want: session.EndAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := &agent.Options{}
				if tt.opts != nil {
					tt.opts(opts)
				}
				h := newHarness(t, opts, tt.script...)
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
				}()
				if tt.during != nil {
					tt.during(h)
				}
				<-done
				evs := h.events()
				if got := lastEnd(t, evs).Reason; got != tt.want {
					t.Errorf("end = %s, want %s\n%s", got, tt.want, dump(evs))
				}
			})
		})
	}
}

// waitCalls lets every goroutine of the synctest bubble settle, then fails
// unless the model has been called at least n times.
func waitCalls(h *harness, n int) {
	h.t.Helper()
	synctest.Wait()
	if got := h.m.Calls(); got < n {
		h.t.Fatalf("model called %d times, want %d", got, n)
	}
}

func TestB03_SeqsIncreaseAcrossRunsAndReopen(t *testing.T) {
	st := session.NewMemStore()
	h := newHarness(t, &agent.Options{Store: st, Session: "s1"}, llmtest.Reply("one"), llmtest.Reply("two"))
	h.run("a")
	h.run("b")
	h.a.Close()
	h2 := newHarness(t, &agent.Options{Store: st, Session: "s1"}, llmtest.Reply("three"))
	h2.run("c")
	evs := h2.events()
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d\n%s", i, ev.Seq, dump(evs))
		}
	}
	turns := map[session.TurnID]bool{}
	for _, ev := range ofTypeEvents(evs, session.TypeTurnStart) {
		turns[ev.Turn] = true
	}
	if len(turns) != 3 {
		t.Errorf("turn ids = %v, want 3 distinct", turns)
	}
}

func ofTypeEvents(evs []session.Event, typ string) []session.Event {
	var out []session.Event
	for _, ev := range evs {
		if ev.Data.EventType() == typ {
			out = append(out, ev)
		}
	}
	return out
}

func TestB04_RunWhileInFlightIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, done := hungRun(t, context.Background())
		before := len(readAll(t, h.store, h.a.Session()))
		start := time.Now()
		_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "second"})
		if !errors.Is(err, agent.ErrBusy) {
			t.Fatalf("second Run err = %v, want ErrBusy", err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("second Run took %v; it should fail at once", time.Since(start))
		}
		if after := len(readAll(t, h.store, h.a.Session())); after != before {
			t.Errorf("second Run wrote %d events", after-before)
		}
		h.a.Cancel("user")
		<-done
		h.events()
	})
}

func TestB05_SecondTurnSeesFirstAfterReopen(t *testing.T) {
	st := session.NewMemStore()
	h := newHarness(t, &agent.Options{Store: st, Session: "s"}, llmtest.Reply("I am rein"))
	h.run("who are you?")
	h.a.Close()
	h2 := newHarness(t, &agent.Options{Store: st, Session: "s"}, llmtest.Reply("ok"))
	h2.run("and now?")
	req := h2.m.Requests()[0]
	want := []string{"user: who are you?", "assistant: I am rein", "user: and now?"}
	if diff := cmp.Diff(want, requestTexts(req)); diff != "" {
		t.Errorf("second turn's request (-want +got):\n%s", diff)
	}
	h2.events()
}

func TestB06_ParallelResultsInModelOrder(t *testing.T) {
	slow := newGateTool("slow")
	fastRan := make(chan struct{})
	fast := funcTool("fast", func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
		close(fastRan)
		return tool.Text("fast done"), nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{slow, fast}},
		llmtest.CallTools(call("c1", "slow", `{}`), call("c2", "fast", `{}`)),
		llmtest.Reply("done"))
	go func() {
		waitStarted(t, slow.started)
		<-fastRan // the second call finished while the first still runs
		close(slow.release)
	}()
	h.run("go")
	evs := h.events()
	var order []string
	for _, ev := range evs {
		switch p := ev.Data.(type) {
		case *session.ToolCall:
			order = append(order, "call "+string(p.CallID))
		case *session.ToolResult:
			order = append(order, "result "+string(p.CallID))
		}
	}
	want := []string{"call c1", "call c2", "result c1", "result c2"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	got := requestTexts(h.m.Requests()[1])
	wantReq := []string{"user: go", "call c1 slow", "call c2 fast", "result c1: slow done", "result c2: fast done"}
	if diff := cmp.Diff(wantReq, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestB06_SerialCapRunsOneByOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newSchedule()
		h := newHarness(t, &agent.Options{Parallel: 1, Tools: []tool.Tool{sc.tool("a"), sc.tool("b"), sc.tool("c")}},
			llmtest.CallTools(call("1", "a", `{}`), call("2", "b", `{}`), call("3", "c", `{}`)), llmtest.Reply("ok"))
		done := h.runAsync("go")
		sc.let(3)
		<-done
		h.events()
		if sc.maxActive != 1 {
			t.Errorf("max concurrent = %d, want 1", sc.maxActive)
		}
		if diff := cmp.Diff([]string{"a", "b", "c"}, sc.started()); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
}

func TestB06_ParallelCapBoundsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newSchedule()
		var calls []llm.ToolCall
		for i := range 6 {
			calls = append(calls, call(fmt.Sprint("c", i), "t", `{}`))
		}
		h := newHarness(t, &agent.Options{Parallel: 2, Tools: []tool.Tool{sc.tool("t")}}, llmtest.CallTools(calls...), llmtest.Reply("ok"))
		done := h.runAsync("go")
		sc.let(len(calls))
		<-done
		h.events()
		if sc.maxActive != 2 {
			t.Errorf("max concurrent = %d, want 2", sc.maxActive)
		}
	})
}

// exclusiveTool records when it runs relative to others.
func TestB07_ExclusiveToolIsABarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newSchedule()
		x := sc.tool("x")
		x.ToolSpec.Exclusive = true
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{sc.tool("a"), x, sc.tool("b")}},
			llmtest.CallTools(call("1", "a", `{}`), call("2", "x", `{}`), call("3", "b", `{}`)), llmtest.Reply("ok"))
		done := h.runAsync("go")
		sc.let(3)
		<-done
		h.events()
		want := []string{"start a", "end a", "start x", "end x", "start b", "end b"}
		if diff := cmp.Diff(want, sc.log); diff != "" {
			t.Errorf("schedule (-want +got):\n%s", diff)
		}
	})
}

// schedule records when its tools start and end. A tool it makes holds,
// once started, until the test lets it go, so the test decides when each
// call ends and, by then, sees every call the loop started beside it.
type schedule struct {
	mu        sync.Mutex
	active    int
	maxActive int
	log       []string
	release   chan struct{}
}

func newSchedule() *schedule { return &schedule{release: make(chan struct{})} }

func (s *schedule) tool(name string) *tool.Func {
	return funcTool(name, func(context.Context, *tool.Call) (*tool.Result, error) {
		s.mu.Lock()
		s.active++
		s.maxActive = max(s.maxActive, s.active)
		s.log = append(s.log, "start "+name)
		s.mu.Unlock()
		<-s.release
		s.mu.Lock()
		s.active--
		s.log = append(s.log, "end "+name)
		s.mu.Unlock()
		return tool.Text(name), nil
	})
}

// let ends n calls one at a time, each once the synctest bubble has
// settled: every call the loop would start beside the held ones has started.
func (s *schedule) let(n int) {
	for range n {
		synctest.Wait()
		s.release <- struct{}{}
	}
}

// started lists the tools in the order they started.
func (s *schedule) started() []string {
	var out []string
	for _, e := range s.log {
		if name, ok := strings.CutPrefix(e, "start "); ok {
			out = append(out, name)
		}
	}
	return out
}
