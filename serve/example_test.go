package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/serve"
	"github.com/reinhq/rein/session"
)

// A server over a memory store whose agents play a scripted model:
// create a session, run a turn, read its events as NDJSON.
func Example() {
	store := session.NewMemStore()
	defer store.Close()
	model := llmtest.NewModel(llmtest.Reply("Hello from rein."))
	srv, err := serve.New(&serve.Options{
		Store: store,
		Token: "secret",
		NewAgent: func(ctx context.Context, req *serve.SessionRequest) (*serve.Handle, error) {
			a, err := agent.New(&agent.Options{Model: model, Store: store, Session: req.Session, Approver: req.Approver})
			return &serve.Handle{Agent: a}, err
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	call := func(method, path, body string) string {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var created serve.Session
	json.Unmarshal([]byte(call("POST", "/v1/sessions", `{}`)), &created)
	call("POST", "/v1/sessions/"+string(created.ID)+"/turns", `{"prompt":"Say hello."}`)
	// Follow the log until the turn ends (GET …/events streams the same).
	for ev := range session.Follow(context.Background(), store, created.ID, 0) {
		fmt.Println(ev.Data.EventType())
		if ev.Data.EventType() == session.TypeTurnEnd {
			break
		}
	}
	// Output:
	// turn.start
	// user.message
	// step.start
	// request.header
	// assistant.message
	// step.end
	// turn.end
}
