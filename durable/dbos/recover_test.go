package dbos_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/tool"
)

// A worker whose session lease is gone (its store closed, as a dead
// process's is) has its turn taken over by another worker, which resumes
// it: the call in flight, of a tool that may not be re-run, is answered
// as interrupted and never run again.
func TestTurnOfALostWorkerIsTakenOver(t *testing.T) {
	url, schema, system := pgSchemas(t)
	ctx := context.Background()
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema, KeepOpenTurns: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	m := llmtest.NewModel(llmtest.CallTool("c1", "work", `{}`), llmtest.Reply("after"))
	driver := func(st session.Store, work tool.Tool) durable.Driver {
		return durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
			a, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{work}, Store: st, Session: req.Turn.Session, Durable: true})
			if err != nil {
				return err
			}
			defer a.Close()
			return durable.RunAgent(ctx, a, req, nil)
		})
	}
	// Worker a hangs in its call; worker b's tool of the same name must
	// never run.
	stA, stB := open(), open()
	started := make(chan struct{}, 1)
	work := func(run func(ctx context.Context) error) tool.Tool {
		tl, err := tool.New("work", "Works.", func(ctx context.Context, _ struct{}, _ *tool.Call) (*tool.Result, error) {
			return tool.Text("worked"), run(ctx)
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	hang := work(func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	var again atomic.Int64
	other := work(func(context.Context) error { again.Add(1); return nil })
	opts := func(st *postgres.Store, d durable.Driver) *dbos.Options {
		// One turn at a time: a, still busy with the hung call, takes no
		// other, as a dead worker would not.
		return &dbos.Options{Schema: system, Store: st, Driver: d, PollEvery: 50 * time.Millisecond, Concurrency: 1,
			RecoverAfter: 300 * time.Millisecond, RecoverEvery: 100 * time.Millisecond}
	}
	a, err := dbos.Open(ctx, url, opts(stA, driver(stA, hang)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sid, err := stA.Create(ctx, &session.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Submit(ctx, &durable.SubmitRequest{Turn: durable.Turn{Session: sid, Prompt: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("worker a never started the call")
	}
	stA.Close() // its lease goes with it
	b, err := dbos.Open(ctx, url, opts(stB, driver(stB, other)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	o, err := b.Wait(wctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reason != session.EndCompleted || o.Resumed != 1 || again.Load() != 0 || m.Calls() != 2 {
		t.Errorf("outcome %+v, b's tool called %d times, %d model calls; want completed after one resume, no call again, 2 model calls",
			o, again.Load(), m.Calls())
	}
}
