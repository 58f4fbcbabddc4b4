package jsonl_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
)

func Example() {
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	st, err := jsonl.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	id, err := st.Create(ctx, &session.CreateRequest{ID: "demo", WorkDir: "/src/app"})
	if err != nil {
		log.Fatal(err)
	}
	err = st.Append(ctx, id,
		session.Event{Seq: 1, Turn: "t1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
		session.Event{Seq: 2, Turn: "t1", Data: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "hello"}}}},
		session.Event{Seq: 3, Turn: "t1", Data: &session.TurnEnd{Reason: session.EndCompleted}},
	)
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range st.Events(ctx, id, 0) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Seq, ev.Data.EventType())
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last seq", info.LastSeq)
	// Output:
	// 1 turn.start
	// 2 user.message
	// 3 turn.end
	// last seq 3
}

// AppendAsync writes a step at once and syncs it in the background; Sync
// waits for the sync before the turn's end is reported.
func ExampleStore_AppendAsync() {
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	st, err := jsonl.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	id, err := st.Create(ctx, &session.CreateRequest{ID: "demo"})
	if err != nil {
		log.Fatal(err)
	}
	steps := [][]session.Event{
		{{Seq: 1, Turn: "t1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}}, {Seq: 2, Turn: "t1", Data: &session.StepStart{Step: 1}}},
		{{Seq: 3, Turn: "t1", Data: &session.StepEnd{Step: 1}}, {Seq: 4, Turn: "t1", Data: &session.TurnEnd{Reason: session.EndCompleted}}},
	}
	for _, batch := range steps {
		// Written before it returns; the fsync of the step's end overlaps
		// whatever the caller does next.
		if err := st.AppendAsync(ctx, id, batch...); err != nil {
			log.Fatal(err)
		}
	}
	if err := st.Sync(ctx, id); err != nil {
		log.Fatal(err)
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("synced through seq", info.LastSeq)
	// Output:
	// synced through seq 4
}
