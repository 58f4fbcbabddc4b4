package agent_test

import (
	"context"
	"encoding/json"
	"iter"
	"strconv"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// benchModel is a scripted model that answers each request with one call
// of the no-op tool, from prebuilt chunks, and a final text answer after
// warm+n requests. Unlike llmtest.Model it keeps no copy of requests, so
// it measures the harness, not the fake. The loop calls it while the
// benchmark's goroutine waits for the run, so it starts the timer once
// the history is warm and stops it at the final answer.
type benchModel struct {
	b      *testing.B
	calls  int
	warm   int
	n      int
	chunks []llm.Chunk
	final  []llm.Chunk
}

func newBenchModel(b *testing.B, warm int) *benchModel {
	m := &benchModel{b: b, warm: warm, n: b.N, final: []llm.Chunk{&llm.TextDelta{Text: "done"}, &llm.Finish{Reason: llm.FinishStop}}}
	// Each response names its call with a fresh id, as providers do; the
	// chunks are built before the timer starts.
	for i := range warm + b.N {
		m.chunks = append(m.chunks,
			&llm.BlockStart{Index: 0, Kind: llm.BlockToolCall, ID: llm.CallID("call_" + strconv.Itoa(i)), Name: "noop"},
			&llm.ToolCallDelta{Index: 0, Args: `{}`},
			&llm.BlockEnd{Index: 0},
			&llm.UsageChunk{Usage: llm.Usage{Input: 10, Output: 5}},
			&llm.Finish{Reason: llm.FinishToolCalls})
	}
	return m
}

func (m *benchModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		m.calls++
		if m.calls == m.warm+1 {
			m.b.ResetTimer()
		}
		var chunks []llm.Chunk
		if m.calls <= m.warm+m.n {
			chunks = m.chunks[(m.calls-1)*5 : m.calls*5]
		} else {
			m.b.StopTimer()
			chunks = m.final
		}
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

var noop = &tool.Func{
	ToolSpec: tool.Spec{Name: "noop", Schema: json.RawMessage(`{"type":"object"}`), Annotations: &tool.Annotations{ReadOnly: true}},
	Fn:       func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil },
}

// runBench runs one turn of m with the no-op tool on the in-memory store,
// no step limit, and opts (nil for none) for the rest, to completion.
func runBench(b *testing.B, m *benchModel, opts *agent.Options) *agent.Result {
	b.Helper()
	a := benchAgent(b, m, opts)
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if err != nil || res.Reason != session.EndCompleted {
		b.Fatalf("run ended %v: %v", res.Reason, err)
	}
	return res
}

// benchAgent is the agent of runBench, closed when the benchmark ends.
func benchAgent(b *testing.B, m *benchModel, opts *agent.Options) *agent.Agent {
	b.Helper()
	if opts == nil {
		opts = &agent.Options{}
	}
	opts.Model, opts.Provider, opts.ModelName = m, "bench", "m"
	opts.Tools, opts.Store, opts.Limits = []tool.Tool{noop}, session.NewMemStore(), agent.Limits{MaxSteps: 1 << 30}
	a, err := agent.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

// BenchmarkStep measures the harness's overhead per step — one model
// response with one tool call, a no-op tool, no hooks, the in-memory store
// — after a history of about N prior events. One op is one step.
func BenchmarkStep(b *testing.B) {
	for _, prior := range []int{10, 1000, 10000} {
		b.Run(strconv.Itoa(prior)+"events", func(b *testing.B) {
			b.ReportAllocs()
			runBench(b, newBenchModel(b, max(prior/6, 1)), nil) // a step writes 6 events
		})
	}
}

// BenchmarkStepStream is BenchmarkStep at 1,000 prior events through
// Stream, every event read: a stream's loop runs on the caller's
// goroutine, where its events are given, and hands each call to a worker.
func BenchmarkStepStream(b *testing.B) {
	b.ReportAllocs()
	a := benchAgent(b, newBenchModel(b, 1000/6), nil)
	var end *session.TurnEnd
	for ev, err := range a.Stream(context.Background(), &agent.RunRequest{Prompt: "go"}) {
		if err != nil {
			b.Fatal(err)
		}
		if e, ok := ev.Data.(*session.TurnEnd); ok {
			end = e
		}
	}
	if end == nil || end.Reason != session.EndCompleted {
		b.Fatalf("the turn ended %+v", end)
	}
}

// BenchmarkStepWithHooks is BenchmarkStep at 1,000 prior events with ten
// no-op handlers at each of the gate, pre-tool-use, result and step-end
// points: the cost of interception on the hot path.
func BenchmarkStepWithHooks(b *testing.B) {
	b.ReportAllocs()
	hs := new(hook.Set)
	for i := range 10 {
		name := "h" + strconv.Itoa(i)
		hs.ToolGate(name, func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { return nil, nil })
		hs.PreToolUse(name, func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { return nil, nil })
		hs.ToolResult(name, func(context.Context, *hook.ToolResultInput) (hook.ResultDecision, error) { return nil, nil })
		hs.StepEnd(name, func(context.Context, *hook.StepEndInput) (hook.StepEndDecision, error) { return nil, nil })
	}
	runBench(b, newBenchModel(b, 1000/6), &agent.Options{Hooks: hs})
}

// BenchmarkStepCacheTelemetry is BenchmarkStep with the prompt cache
// asked for, responses that read a growing cached prefix (so the watcher
// checks every response for a break) and automatic compaction armed with
// a window it never reaches (so every step measures the context). Its
// cost per step must not grow with the history.
func BenchmarkStepCacheTelemetry(b *testing.B) {
	for _, prior := range []int{10, 1000, 10000} {
		b.Run(strconv.Itoa(prior)+"events", func(b *testing.B) {
			b.ReportAllocs()
			m := newBenchModel(b, max(prior/6, 1))
			for i := 3; i < len(m.chunks); i += 5 {
				n := int64(i / 5)
				m.chunks[i] = &llm.UsageChunk{Usage: llm.Usage{Input: 10, Output: 5, CacheRead: 2000 + 20*n, CacheWrite: 20}}
			}
			res := runBench(b, m, &agent.Options{PromptCache: &llm.CacheHint{}, ContextWindow: 1 << 30, Compaction: &agent.CompactionOptions{}})
			breaks := 0
			for _, ev := range res.Events {
				switch ev.Data.(type) {
				case *session.CacheBreak, *session.CacheDrift:
					breaks++
				}
			}
			if breaks > 1 {
				b.Fatalf("%d cache events in a healthy loop", breaks)
			}
		})
	}
}
