package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"), nil)
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
