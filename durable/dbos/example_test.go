package dbos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

// An embedded worker on SQLite: nothing to start. Submit queues a turn,
// the worker drives it, Wait returns how it ended.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rein-dbos-example")
	defer os.RemoveAll(dir)
	st := session.NewMemStore()
	drive := durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
		a, err := agent.New(&agent.Options{Model: llmtest.NewModel(llmtest.Reply("Paris.")), Store: st,
			Session: req.Turn.Session, Durable: true})
		if err != nil {
			return err
		}
		defer a.Close()
		return durable.RunAgent(ctx, a, req, nil)
	})
	eng, err := dbos.Open(ctx, "sqlite:"+filepath.Join(dir, "dbos.db"), &dbos.Options{Store: st, Driver: drive})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	id, _ := st.Create(ctx, &session.CreateRequest{})
	turn, err := eng.Submit(ctx, &durable.SubmitRequest{Turn: durable.Turn{Session: id, Prompt: "Capital of France?"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := eng.Wait(ctx, turn)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Reason)
	// Output: completed
}
