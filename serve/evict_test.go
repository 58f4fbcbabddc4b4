package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/serve"
	"github.com/reinhq/rein/session"
)

// TestIdleAgentsAreEvicted: an agent with no turn for IdleTimeout is
// closed; the next turn builds it again from the store, with the
// session's history; a turn that runs longer than the timeout keeps its
// agent.
func TestIdleAgentsAreEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := session.NewMemStore()
		defer st.Close()
		model := llmtest.NewModel(llmtest.Reply("one"), llmtest.Reply("two").WithDelay(3*time.Minute))
		var built, closed atomic.Int32
		srv, err := serve.New(&serve.Options{
			Store: st, Token: testToken, Root: t.TempDir(), IdleTimeout: time.Minute,
			NewAgent: func(ctx context.Context, req *serve.SessionRequest) (*serve.Handle, error) {
				a, err := agent.New(&agent.Options{Model: model, Provider: "anthropic", ModelName: "claude-sonnet-4-5", Store: st, Session: req.Session})
				if err != nil {
					return nil, err
				}
				built.Add(1)
				return &serve.Handle{Agent: a, Close: func() error { closed.Add(1); return a.Close() }}, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		call := func(method, path, body string, want int) []byte {
			t.Helper()
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, want)
			}
			return rec.Body.Bytes()
		}
		counts := func(when string, wantBuilt, wantClosed int32) {
			t.Helper()
			synctest.Wait()
			if b, c := built.Load(), closed.Load(); b != wantBuilt || c != wantClosed {
				t.Fatalf("%s: %d agents built, %d closed; want %d, %d", when, b, c, wantBuilt, wantClosed)
			}
		}
		var s serve.Session
		if err := json.Unmarshal(call("POST", "/v1/sessions", "", http.StatusCreated), &s); err != nil {
			t.Fatal(err)
		}
		turns := "/v1/sessions/" + string(s.ID) + "/turns"
		call("POST", turns, `{"prompt":"first"}`, http.StatusAccepted)
		counts("after the first turn", 1, 0)

		time.Sleep(59 * time.Second)
		counts("idle for less than the timeout", 1, 0)
		time.Sleep(2 * time.Second)
		counts("idle for longer than the timeout", 1, 1)
		call("GET", "/v1/sessions/"+string(s.ID), "", http.StatusOK)
		counts("reading the session needs no agent", 1, 1)

		call("POST", turns, `{"prompt":"second"}`, http.StatusAccepted)
		counts("a new turn", 2, 1)
		time.Sleep(2 * time.Minute)
		counts("a turn longer than the timeout", 2, 1)
		time.Sleep(time.Minute + time.Second)
		counts("the long turn ended a moment ago", 2, 1)
		time.Sleep(time.Minute)
		counts("idle after the long turn", 2, 2)

		reqs := model.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model requests, want 2", len(reqs))
		}
		var texts []string
		for _, m := range reqs[1].Messages {
			for _, p := range m.Parts {
				if tx, ok := p.(*llm.Text); ok {
					texts = append(texts, tx.Text)
				}
			}
		}
		if got := strings.Join(texts, "|"); got != "first|one|second" {
			t.Errorf("the rebuilt agent sent %q; want the session's history first|one|second", got)
		}
		var ends int
		for ev, err := range st.Events(context.Background(), s.ID, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := ev.Data.(*session.TurnEnd); ok && e.Reason == session.EndCompleted {
				ends++
			}
		}
		if ends != 2 {
			t.Errorf("%d completed turns in the log, want 2", ends)
		}
	})
}

// TestEvictionKeepsStreams: a stream open on a session whose agent was
// evicted goes on, and carries the next turn of the agent built again,
// with no event lost or repeated.
func TestEvictionKeepsStreams(t *testing.T) {
	var closed atomic.Int32
	f := newFixture(t, &fixtureOptions{idle: 20 * time.Millisecond, closed: &closed}, llmtest.Reply("one"), llmtest.Reply("two"))
	id := f.create("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.openSSE(ctx, id, "")
	defer s.Close()
	turnEnd := func(e wireEvent) bool { return e.Type == session.TypeTurnEnd }
	turns := "/v1/sessions/" + string(id) + "/turns"
	f.want(http.StatusAccepted, "POST", turns, `{"prompt":"first"}`, nil)
	first, err := s.read(turnEnd)
	if err != nil {
		t.Fatal(err)
	}
	if !testwait.For(10*time.Second, func() bool { return closed.Load() == 1 }) {
		t.Fatal("the idle agent was not closed")
	}
	f.want(http.StatusAccepted, "POST", turns, `{"prompt":"second"}`, nil)
	second, err := s.read(turnEnd)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range append(first, second...) {
		if e.Seq > 0 {
			seqs = append(seqs, e.Seq)
		}
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("the stream's seqs %v: lost or repeated at %d", seqs, i)
		}
	}
	if want := f.events(id); int64(len(want)) != seqs[len(seqs)-1] {
		t.Errorf("the stream saw up to seq %d of %d events", seqs[len(seqs)-1], len(want))
	}
}
