package durable_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

// A turn driven by Step: run the first time, only read when run again
// after it ended (an engine that did not record the end).
func ExampleStep() {
	ctx := context.Background()
	st := session.NewMemStore()
	id, _ := st.Create(ctx, &session.CreateRequest{})
	model := llmtest.NewModel(llmtest.Reply("Paris."))
	drive := durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
		a, err := agent.New(&agent.Options{Model: model, Store: st, Session: req.Turn.Session, Durable: true})
		if err != nil {
			return err
		}
		defer a.Close()
		return durable.RunAgent(ctx, a, req, nil)
	})
	turn := &durable.Turn{Session: id, Prompt: "Capital of France?"}
	for range 2 {
		out, err := durable.Step(ctx, st, turn, drive)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(out.Reason, "model calls:", model.Calls())
	}
	// Output:
	// completed model calls: 1
	// completed model calls: 1
}
