package dbos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
	"github.com/reinhq/rein/internal/cputime"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/tooltest"
)

// benchSteps is the length of a benchmark turn: steps-1 calls of a tool
// that may not be re-run, then an answer.
const benchSteps = 10

// stepModel answers a request with a call of noop until the turn has
// steps-1 results, then with text.
func stepModel() *llmtest.Model {
	m := llmtest.NewModel()
	respond := llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		n := 0
		for _, msg := range req.Messages {
			for _, p := range msg.Parts {
				if _, ok := p.(*llm.ToolResult); ok {
					n++
				}
			}
		}
		if n < benchSteps-1 {
			return llmtest.CallTool(fmt.Sprintf("c%d", n), "noop", `{}`)
		}
		return llmtest.Reply("done")
	})
	for range benchSteps {
		m.Add(respond)
	}
	return m
}

// BenchmarkTurn runs a turn of benchSteps steps per iteration, in a new
// session, three ways on each store: a plain agent's Run; a durable
// agent's Run (turn pin, a synced start before each call); and the
// durable turn through the DBOS engine (submit, a worker's two recorded
// steps, wait). It reports the clock and CPU time per step.
func BenchmarkTurn(b *testing.B) {
	b.Run("postgres", func(b *testing.B) {
		url, schema, system := pgSchemas(b)
		st, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema, KeepOpenTurns: true})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchTurns(b, st, url, system)
	})
	b.Run("sqlite", func(b *testing.B) {
		st, url := embedded(b)
		benchTurns(b, st, url, "")
	})
}

func benchTurns(b *testing.B, st session.Store, url, system string) {
	noop := tooltest.NewRecorder("noop", nil)
	run := func(ctx context.Context, st session.Store, req *durable.DriveRequest, durableTurn bool) error {
		a, err := agent.New(&agent.Options{Model: stepModel(), Tools: []tool.Tool{noop}, Store: st,
			Session: req.Turn.Session, Durable: durableTurn})
		if err != nil {
			return err
		}
		defer a.Close()
		return durable.RunAgent(ctx, a, req, nil)
	}
	for _, durableTurn := range []bool{false, true} {
		name := "plain"
		if durableTurn {
			name = "durable"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			measure(b, func() {
				id, err := st.Create(ctx, &session.CreateRequest{})
				if err != nil {
					b.Fatal(err)
				}
				if err := run(ctx, st, &durable.DriveRequest{Turn: &durable.Turn{Session: id, Prompt: "go"}}, durableTurn); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	b.Run("engine", func(b *testing.B) {
		ctx := context.Background()
		drive := durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
			return run(ctx, st, req, true)
		})
		eng, err := dbos.Open(ctx, url, &dbos.Options{Schema: system, Store: st, Driver: drive, PollEvery: 10 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close()
		measure(b, func() {
			id, err := st.Create(ctx, &session.CreateRequest{})
			if err != nil {
				b.Fatal(err)
			}
			turn, err := eng.Submit(ctx, &durable.SubmitRequest{Turn: durable.Turn{Session: id, Prompt: "go"}})
			if err != nil {
				b.Fatal(err)
			}
			if o, err := eng.Wait(ctx, turn); err != nil || o.Reason != session.EndCompleted {
				b.Fatalf("turn: %+v, %v", o, err)
			}
		})
	})
}

// measure times b.N calls of turn and reports the clock and CPU time
// (user and system, the worker's included: it runs in this process) per
// step.
func measure(b *testing.B, turn func()) {
	c0 := cputime.Process()
	b.ResetTimer()
	for range b.N {
		turn()
	}
	b.StopTimer()
	steps := float64(b.N * benchSteps)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/steps, "µs/step")
	b.ReportMetric(float64((cputime.Process()-c0).Microseconds())/steps, "cpu-µs/step")
}
