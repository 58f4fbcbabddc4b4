package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"regexp"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// A Run runs a batch's lone call on the worker that drives its loop; the
// caller of Run keeps the call's grace. These tests hold that call past
// its grace in each way a run asks it to stop, and one holds it in a
// Stream, whose calls run on workers.

// stuckTool is a gate tool that ignores cancellation.
func stuckTool() *gateTool {
	g := newGateTool("stuck")
	g.ignore = true
	return g
}

// stopStuck waits for g's call to start, asks it to stop with stop, and
// waits for the run's outcome on done, failing the test unless the call
// was left after exactly grace. It runs in a synctest bubble.
func stopStuck[T any](t *testing.T, g *gateTool, grace time.Duration, stop func(), done <-chan T) T {
	t.Helper()
	waitStarted(t, g.started)
	start := time.Now()
	stop()
	out := <-done
	if waited := time.Since(start); waited != grace {
		t.Errorf("the call was left after %v, want its grace of %v", waited, grace)
	}
	return out
}

// cancelTool is CancelTool of id for stopStuck.
func cancelTool(t *testing.T, h *harness, id llm.CallID, reason string) func() {
	return func() {
		if err := h.a.CancelTool(id, reason); err != nil {
			t.Fatal(err)
		}
	}
}

// wantInterrupted fails the test unless call id's result reads as text
// and is marked interrupted.
func wantInterrupted(t *testing.T, evs []session.Event, id llm.CallID, text string) {
	t.Helper()
	r := results(evs)[id]
	if got := resultText(r); got != text || !r.Interrupted {
		t.Errorf("%s = %q %+v, want %q interrupted", id, got, r, text)
	}
}

// wantResults fails the test unless each call's result reads as want.
func wantResults(t *testing.T, evs []session.Event, want map[llm.CallID]string) {
	t.Helper()
	rs := results(evs)
	for id, text := range want {
		if got := resultText(rs[id]); got != text {
			t.Errorf("%s = %q, want %q", id, got, text)
		}
	}
}

func TestB24_StuckLoneCallIsLeftAfterItsGraceAndTheTurnGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := stuckTool()
		defer close(g.release)
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}, ToolGrace: 5 * time.Second},
			llmtest.CallTool("c1", "stuck", `{}`), llmtest.Reply("moved on"))
		out := stopStuck(t, g, 5*time.Second, cancelTool(t, h, "c1", "too slow"), h.runAsync("go"))
		if out.err != nil || out.res.Reason != session.EndCompleted || out.res.Text != "moved on" {
			t.Fatalf("Run = %+v, %v; want completed \"moved on\"", out.res, out.err)
		}
		wantInterrupted(t, h.events(), "c1", "tool call cancelled: too slow")
	})
}

func TestB23_StuckLoneCallIsAbortedAfterGraceWhenTheCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := stuckTool()
		defer close(g.release)
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}, ToolGrace: 3 * time.Second}, llmtest.CallTool("c1", "stuck", `{}`))
		ctx, cancel := context.WithCancel(context.Background())
		out := stopStuck(t, g, 3*time.Second, cancel, h.runAsyncCtx(ctx, "go"))
		if out.res == nil || out.res.Reason != session.EndAborted {
			t.Fatalf("Run = %+v, %v; want aborted", out.res, out.err)
		}
		wantInterrupted(t, h.events(), "c1", "tool call aborted")
	})
}

func TestB23_StuckCallOfAStreamIsAbortedAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := stuckTool()
		defer close(g.release)
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}, ToolGrace: 2 * time.Second}, llmtest.CallTool("c1", "stuck", `{}`))
		cancelled := make(chan time.Time, 1)
		go func() {
			<-g.started
			cancelled <- time.Now()
			h.a.Cancel("user")
		}()
		var end session.EndReason
		for ev, err := range h.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go"}) {
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if p, ok := ev.Data.(*session.TurnEnd); ok {
				end = p.Reason
			}
		}
		start := <-cancelled
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("the call was left after %v, want its grace of 2s", waited)
		}
		if end != session.EndAborted {
			t.Errorf("turn ended %q, want aborted", end)
		}
		if got := resultText(results(h.events())["c1"]); got != "tool call aborted" {
			t.Errorf("c1 = %q", got)
		}
	})
}

func TestDurable_SuspendLeavesAStuckLoneCallAfterItsGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := stuckTool()
		defer close(g.release)
		st := session.NewMemStore()
		a := durableAgent(t, st, llmtest.NewModel(llmtest.CallTool("c1", "stuck", `{}`)), nil, g)
		suspend := func() {
			if err := a.Suspend(4 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
		res := stopStuck(t, g, 4*time.Second, suspend, runAsync(a, "go"))
		if res.Reason != session.EndSuspended {
			t.Fatalf("run ended %s, want suspended", res.Reason)
		}
		evs := readAll(t, st, "s")
		if r, ok := results(evs)["c1"]; ok {
			t.Errorf("the left call has a result: %+v", r)
		}
		if sus := ofType[*session.TurnSuspend](evs); len(sus) != 1 {
			t.Errorf("turn.suspend = %+v, want one", sus)
		}
	})
}

// panickyState is a state store whose Load panics.
type panickyState struct{ tool.StateStore }

func (panickyState) Load(context.Context, string, string) (map[string]string, error) {
	panic("state store bug")
}

// panicText is how a turn error names the state store's panic in a call
// of noop (c1 or c2, whichever ran into it first).
var panicText = regexp.MustCompile(`the loop panicked: tool noop, call c[12], outside the tool's body: state store bug$`)

// wantPanicClosed fails the test unless the run ended with the state
// store's panic as a turn error, and the turn is closed on the log as
// interrupted.
func wantPanicClosed(t *testing.T, h *harness, res *agent.Result, err error) {
	t.Helper()
	var te *agent.TurnError
	if !errors.As(err, &te) || te.Code != "panic" || !panicText.MatchString(err.Error()) {
		t.Fatalf("the run ended with %+v, %v; want the panic as a turn error", res, err)
	}
	if end := lastEnd(t, h.events()); end.Reason != session.EndInterrupted {
		t.Errorf("turn ended %s, want interrupted", end.Reason)
	}
}

// TestRunPanicOutsideTheToolClosesTheTurn: a panic on the worker that
// runs a Run's call, outside the tool's body (which tool.Run recovers),
// is the loop's: the turn is closed on the log as interrupted and Run
// returns it as an error.
func TestRunPanicOutsideTheToolClosesTheTurn(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{noop}, State: panickyState{tool.NewMemStateStore()}}, llmtest.CallTool("c1", "noop", `{}`))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	wantPanicClosed(t, h, res, err)
}

// TestStreamPanicOutsideTheToolClosesTheTurn: the same panic on the
// worker that runs a Stream's call is the loop's too, not the process's.
func TestStreamPanicOutsideTheToolClosesTheTurn(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{noop}, State: panickyState{tool.NewMemStateStore()}}, llmtest.CallTool("c1", "noop", `{}`))
	var last error
	for _, err := range h.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go"}) {
		if err != nil {
			last = err
		}
	}
	wantPanicClosed(t, h, nil, last)
}

// TestRunPanicOutsideTheToolOfAParallelCallClosesTheTurn: and so is the
// panic of a call that runs on a worker beside another.
func TestRunPanicOutsideTheToolOfAParallelCallClosesTheTurn(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{noop}, State: panickyState{tool.NewMemStateStore()}},
		llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "noop", Args: json.RawMessage(`{}`)}, llm.ToolCall{ID: "c2", Name: "noop", Args: json.RawMessage(`{}`)}))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	wantPanicClosed(t, h, res, err)
}

// commitPanics is a state store whose Commit panics.
type commitPanics struct{ tool.StateStore }

func (commitPanics) Commit(context.Context, string, string, map[string]string) error {
	panic("state store bug")
}

// messages is a slog.Handler that passes on each record's message.
type messages chan string

func (m messages) Enabled(context.Context, slog.Level) bool { return true }
func (m messages) Handle(_ context.Context, r slog.Record) error {
	m <- r.Message
	return nil
}
func (m messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m messages) WithGroup(string) slog.Handler      { return m }

// TestB24_PanicOfALeftCallIsLoggedAfterTheTurnWentOn: a call left after
// its grace whose state store then panics, once the call returns, does
// not take the process or a later turn down; the panic is logged. Both
// ways a call runs: on a Run's driver and on a Stream's worker.
func TestB24_PanicOfALeftCallIsLoggedAfterTheTurnWentOn(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "Run", true: "Stream"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := stuckTool()
				g.set = true
				logs := make(messages, 16)
				h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}, ToolGrace: time.Second,
					State: commitPanics{tool.NewMemStateStore()}, Logger: slog.New(logs)},
					llmtest.CallTool("c1", "stuck", `{}`), llmtest.Reply("moved on"))
				done := make(chan string, 1)
				go func() {
					if !stream {
						res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
						if err != nil {
							done <- err.Error()
							return
						}
						done <- fmt.Sprint(res.Text, err)
						return
					}
					var end session.EndReason
					var last error
					for ev, err := range h.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go"}) {
						if p, ok := ev.Data.(*session.TurnEnd); ok {
							end = p.Reason
						}
						if err != nil {
							last = err
						}
					}
					done <- fmt.Sprint(end, last)
				}()
				want := map[bool]string{false: "moved on<nil>", true: "completed<nil>"}[stream]
				if got := stopStuck(t, g, time.Second, cancelTool(t, h, "c1", "too slow"), done); got != want {
					t.Fatalf("the turn ended with %q, want %q: the reply after the left call", got, want)
				}
				close(g.release) // the left call returns, and its state's commit panics
				for msg := range logs {
					if msg == "a tool call panicked outside its tool" {
						break
					}
				}
				wantResults(t, h.events(), map[llm.CallID]string{"c1": "tool call cancelled: too slow"})
			})
		})
	}
}

// TestRunGoexitOfTheLoopEndsTheCaller: runtime.Goexit on a Run's loop
// (t.FailNow in a test's model or hook) ends the goroutine that called
// Run, as it did when the loop ran there, instead of leaving it waiting.
func TestRunGoexitOfTheLoopEndsTheCaller(t *testing.T) {
	// The model calls runtime.Goexit on the goroutine that asks it.
	goexit := llm.ModelFunc(func(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
		return func(func(llm.Chunk, error) bool) { runtime.Goexit() }
	})
	a, err := agent.New(&agent.Options{Model: goexit, Provider: llmtest.Provider, ModelName: "scripted", Store: session.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	// Not closed: the run the Goexit cut short never ended.
	returned := make(chan bool)
	go func() {
		done := false
		defer func() { returned <- done }()
		a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
		done = true
	}()
	if <-returned {
		t.Error("Run returned after its loop called runtime.Goexit")
	}
}

// TestB24_EachStuckLoneCallKeepsItsGrace: the first call is left behind
// and returns while the second, run by the next driver, is stuck; the
// second is still left after its own grace.
func TestB24_EachStuckLoneCallKeepsItsGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g1, g2 := stuckTool(), newGateTool("stuck2")
		g2.ignore = true
		defer close(g2.release)
		h := newHarness(t, &agent.Options{Tools: []tool.Tool{g1, g2}, ToolGrace: time.Second},
			llmtest.CallTool("c1", "stuck", `{}`), llmtest.CallTool("c2", "stuck2", `{}`), llmtest.Reply("done"))
		done := h.runAsync("go")
		waitStarted(t, g1.started)
		cancelTool(t, h, "c1", "first")()
		release := func() {
			close(g1.release) // the first driver's call returns, long after it was left
			synctest.Wait()
			cancelTool(t, h, "c2", "second")()
		}
		out := stopStuck(t, g2, time.Second, release, done)
		if out.err != nil || out.res.Text != "done" {
			t.Fatalf("Run = %+v, %v", out.res, out.err)
		}
		wantResults(t, h.events(), map[llm.CallID]string{"c1": "tool call cancelled: first", "c2": "tool call cancelled: second"})
	})
}

// TestB24_StuckCallOfASequentialBatchIsLeftAndTheNextRuns: with calls run
// one at a time, each runs on the loop's driver; the first, stuck past its
// grace, is left and the second still runs.
func TestB24_StuckCallOfASequentialBatchIsLeftAndTheNextRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := stuckTool()
		defer close(g.release)
		next := funcTool("next", func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("next ran"), nil })
		h := newHarness(t, &agent.Options{Parallel: 1, Tools: []tool.Tool{g, next}, ToolGrace: 2 * time.Second},
			llmtest.CallTools(call("c1", "stuck", `{}`), call("c2", "next", `{}`)), llmtest.Reply("done"))
		out := stopStuck(t, g, 2*time.Second, cancelTool(t, h, "c1", "too slow"), h.runAsync("go"))
		if out.err != nil || out.res.Text != "done" {
			t.Fatalf("Run = %+v, %v", out.res, out.err)
		}
		wantResults(t, h.events(), map[llm.CallID]string{"c1": "tool call cancelled: too slow", "c2": "next ran"})
	})
}
