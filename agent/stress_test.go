package agent_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

var stressTurns = flag.Int("stress-turns", 1000, "turns of TestStressConcurrentControl")

// chaosModel answers at random: text, one or several tool calls (some
// unknown, some malformed), with small delays that honour ctx.
type chaosModel struct {
	mu   sync.Mutex
	rng  *rand.Rand
	next atomic.Int64
	last atomic.Value // the last call id handed out
}

func (m *chaosModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		m.mu.Lock()
		kind := m.rng.IntN(10)
		ncalls := 1 + m.rng.IntN(3)
		delay := time.Duration(m.rng.IntN(300)) * time.Microsecond
		m.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		if !yield(&llm.TextDelta{Index: 0, Text: "working"}, nil) {
			return
		}
		if kind < 3 || len(req.Messages) > 12 {
			yield(&llm.Finish{Reason: llm.FinishStop}, nil)
			return
		}
		if kind == 3 {
			yield(nil, &llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529})
			return
		}
		for i := range ncalls {
			id := llm.CallID(fmt.Sprintf("k%d", m.next.Add(1)))
			m.last.Store(id)
			name, args := "sleep", `{}`
			switch m.rng.IntN(8) {
			case 0:
				name = "missing"
			case 1:
				args = `{"broken`
			}
			if !yield(&llm.ToolCallDelta{Index: i + 1, ID: id, Name: name, Args: args}, nil) {
				return
			}
		}
		yield(&llm.UsageChunk{Usage: llm.Usage{Input: 5, Output: 5}}, nil)
		yield(&llm.Finish{Reason: llm.FinishToolCalls}, nil)
	}
}

// TestStressConcurrentControl runs many short turns while another
// goroutine steers, follows up, cancels runs and cancels tool calls at
// random; every log must stay balanced and paired.
func TestStressConcurrentControl(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	before := numGoroutines()
	m := &chaosModel{rng: rand.New(rand.NewPCG(1, 2))}
	sleep := &tool.Func{
		ToolSpec: tool.Spec{Name: "sleep", Schema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			select {
			case <-time.After(time.Duration(rand.IntN(500)) * time.Microsecond):
				return tool.Text("slept"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
	st := session.NewMemStore()
	a, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{sleep}, Store: st, Parallel: 2, ToolGrace: 50 * time.Millisecond,
		Limits: agent.Limits{MaxSteps: 6}, Retry: &agent.RetryPolicy{MaxRetries: 1}, Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(400)) * time.Microsecond):
			}
			switch rng.IntN(6) {
			case 0:
				a.Steer(text("steer"))
			case 1:
				a.FollowUp(text("follow"))
			case 2:
				a.Cancel("user")
			case 3, 4:
				if id, ok := m.last.Load().(llm.CallID); ok {
					a.CancelTool(id, "chaos")
				}
			case 5:
				a.Inject(context.Background(), text("fyi"))
			}
		}
	}()
	ends := map[session.EndReason]int{}
	for i := range *stressTurns {
		res, _ := a.Run(context.Background(), &agent.RunRequest{Prompt: fmt.Sprint("turn ", i)})
		if res != nil {
			ends[res.Reason]++
		}
	}
	close(stop)
	wg.Wait()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	evs := readAll(t, st, a.Session())
	if err := session.Balanced(evs); err != nil {
		t.Fatalf("log not balanced after %d turns: %v", *stressTurns, err)
	}
	t.Logf("%d events; turn ends %v", len(evs), ends)
	if ends[session.EndAborted] == 0 || ends[session.EndCompleted] == 0 {
		t.Errorf("the chaos did not exercise both paths: %v", ends)
	}
	checkNoLeak(t, before)
}
