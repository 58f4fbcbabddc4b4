package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
)

func Example() {
	ctx := context.Background()
	// A URL such as postgres://user:password@localhost:5432/app; the
	// tables go to the schema "rein" unless Options or the URL's
	// search_path name another.
	url := os.Getenv("REIN_TEST_POSTGRES")
	st, err := postgres.Open(ctx, url, &postgres.Options{Schema: "rein_example"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	id, err := st.Create(ctx, &session.CreateRequest{WorkDir: "/src/app"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Delete(ctx, id)
	// One transaction: the commit point. It takes the session's lease,
	// so no other process appends to it until this Store closes.
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
