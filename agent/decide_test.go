package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// decider is a cheap model of its own, so the tests can tell its
// requests from the agent's.
func decider(script ...llmtest.Entry) (*llmtest.Model, *agent.Target) {
	m := llmtest.NewModel(script...)
	return m, &agent.Target{Provider: llmtest.Provider, Model: "cheap", Client: m}
}

// Each kind of decision asked of an idle agent gets its validated answer,
// asked of the decision model with the answer's schema, and is recorded
// in a turn of its own with its answer and cost.
func TestDecideKinds(t *testing.T) {
	tests := []struct {
		name  string
		req   agent.DecideRequest
		reply string
		want  agent.Verdict
		field string // the schema's answer field
	}{
		{"probability", agent.DecideRequest{Kind: agent.DecideProbability, Question: "the tests pass", Context: "ok 12/12"},
			`{"probability":0.9,"reason":"all green"}`, agent.Verdict{Kind: agent.DecideProbability, Probability: 0.9, Reason: "all green"}, "probability"},
		{"choice", agent.DecideRequest{Kind: agent.DecideChoice, Question: "which file next?", Options: []string{"a.go", "b.go"}},
			"```json\n{\"choice\":\"b.go\",\"reason\":\"tests\"}\n```", agent.Verdict{Kind: agent.DecideChoice, Choice: "b.go", Reason: "tests"}, "choice"},
		{"score", agent.DecideRequest{Kind: agent.DecideScore, Question: "the patch's quality", Min: 1, Max: 5},
			`{"score":4,"reason":"clean"}`, agent.Verdict{Kind: agent.DecideScore, Score: 4, Reason: "clean"}, "score"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, target := decider(llmtest.Reply(tt.reply).WithUsage(llm.Usage{Input: 40, Output: 8}))
			h := newHarness(t, &agent.Options{Decider: target, Cost: func(string, llm.Usage) float64 { return 0.25 }})
			got, err := h.a.Decide(context.Background(), &tt.req)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			want := tt.want
			want.Attempts, want.Provider, want.Model, want.Usage, want.Cost = 1, llmtest.Provider, "cheap", llm.Usage{Input: 40, Output: 8}, 0.25
			if d := cmp.Diff(&want, got); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
			if n := len(h.m.Requests()); n != 0 {
				t.Errorf("the agent's own model got %d requests; the decision model should answer", n)
			}
			req := m.Requests()[0]
			if req.ResponseFormat == nil || !strings.Contains(string(req.ResponseFormat.Schema), `"`+tt.field+`"`) {
				t.Errorf("request asks for no structured %s answer: %+v", tt.field, req.ResponseFormat)
			}
			if !containsText(req, tt.req.Question) {
				t.Errorf("request does not hold the question %q", tt.req.Question)
			}
			evs := h.events()
			if d := cmp.Diff([]string{"turn.start", "decision", "turn.end"}, types(evs)); d != "" {
				t.Fatalf("log (-want +got):\n%s", d)
			}
			if ts := evs[0].Data.(*session.TurnStart); ts.Trigger != session.TriggerDecide {
				t.Errorf("trigger = %q, want %q", ts.Trigger, session.TriggerDecide)
			}
			rec := evs[1].Data.(*session.Decision)
			if rec.Kind != tt.name || rec.Attempts != 1 || rec.Cost != 0.25 || rec.Usage.Output != 8 || rec.Model != "cheap" || rec.Error != "" {
				t.Errorf("recorded decision = %+v", rec)
			}
			if rec.Value != got.Probability+got.Score || rec.Choice != got.Choice {
				t.Errorf("recorded answer %v/%q, returned %+v", rec.Value, rec.Choice, got)
			}
		})
	}
}

// An invalid answer — out of range, not an option, not JSON — is asked
// again once, with the reason it was refused, and the second answer wins.
func TestDecideRetriesAnInvalidAnswerOnce(t *testing.T) {
	for name, bad := range map[string]string{
		"out of range": `{"score":11,"reason":"great"}`,
		"not JSON":     "I would say about seven.",
		"no field":     `{"rating":7}`,
	} {
		t.Run(name, func(t *testing.T) {
			m, target := decider(llmtest.Reply(bad), llmtest.Reply(`{"score":7,"reason":"good"}`))
			h := newHarness(t, nil)
			got, err := h.a.Decide(context.Background(), &agent.DecideRequest{Kind: agent.DecideScore, Question: "rate it", Target: target})
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if got.Score != 7 || got.Attempts != 2 {
				t.Errorf("verdict = %+v, want score 7 after 2 attempts", got)
			}
			if got.Usage != (llm.Usage{Input: 20, Output: 10}) {
				t.Errorf("usage = %+v, want both attempts' (2 × DefaultUsage)", got.Usage)
			}
			second := m.Requests()[1]
			if !containsText(second, bad) || !containsText(second, "not valid") {
				t.Errorf("the second request does not show the invalid answer and why: %q", requestTexts(second))
			}
			if rec := ofType[*session.Decision](h.events()); len(rec) != 1 || rec[0].Attempts != 2 || rec[0].Value != 7 {
				t.Errorf("recorded = %+v", rec)
			}
		})
	}
}

// A tool of a run decides through the run's agent; answers that stay
// invalid and a failed model request end in a *DecideError the tool
// branches on, recorded in the run — and the run completes.
func TestDecideFailureDoesNotFailTheRun(t *testing.T) {
	_, target := decider(
		llmtest.Reply(`{"choice":"maybe"}`), llmtest.Reply(`{"choice":"perhaps"}`), // invalid twice
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, Provider: llmtest.Provider, StatusCode: 529, Message: "busy"}),
	)
	var causes []agent.DecideCause
	judge := funcTool("judge", func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		for range 2 {
			_, err := agent.Decide(ctx, &agent.DecideRequest{Kind: agent.DecideChoice, Question: "ship it?", Options: []string{"yes", "no"}, CallID: call.ID})
			var de *agent.DecideError
			if !errors.As(err, &de) || !errors.Is(err, agent.ErrUndecided) {
				t.Errorf("Decide error = %v, want a *DecideError wrapping ErrUndecided", err)
				return tool.Text("?"), nil
			}
			causes = append(causes, de.Cause)
		}
		return tool.Text("undecided; asking a person"), nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{judge}, Decider: target},
		llmtest.CallTool("c1", "judge", `{}`), llmtest.Reply("done"))
	res := h.run("decide")
	if res.Text != "done" {
		t.Errorf("answer = %q, want done", res.Text)
	}
	if d := cmp.Diff([]agent.DecideCause{agent.DecideInvalidAnswer, agent.DecideModelFailed}, causes); d != "" {
		t.Errorf("causes (-want +got):\n%s", d)
	}
	evs := h.events()
	recs := ofType[*session.Decision](evs)
	if len(recs) != 2 {
		t.Fatalf("recorded %d decisions, want 2:\n%s", len(recs), dump(evs))
	}
	if r := recs[0]; r.Attempts != 2 || !strings.HasPrefix(r.Error, "invalid-answer") || r.CallID != "c1" || r.Choice != "" {
		t.Errorf("first record = %+v", r)
	}
	if r := recs[1]; r.Attempts != 1 || !strings.HasPrefix(r.Error, "model-failed") {
		t.Errorf("second record = %+v", r)
	}
	for _, ev := range evs {
		if _, ok := ev.Data.(*session.Decision); ok && ev.Run == "" {
			t.Errorf("a decision of the run was recorded outside it: %+v", ev)
		}
	}
	if end := lastEnd(t, evs); end.Reason != session.EndCompleted {
		t.Errorf("turn ended %s, want completed", end.Reason)
	}
}

// A request that cannot be asked is refused before any model request,
// with what to fix, and nothing is recorded.
func TestDecideBadRequests(t *testing.T) {
	m, target := decider()
	h := newHarness(t, &agent.Options{Decider: target})
	for name, req := range map[string]*agent.DecideRequest{
		"nil":          nil,
		"no question":  {Kind: agent.DecideProbability},
		"one option":   {Kind: agent.DecideChoice, Question: "q", Options: []string{"a"}},
		"repeated":     {Kind: agent.DecideChoice, Question: "q", Options: []string{"a", "a"}},
		"empty range":  {Kind: agent.DecideScore, Question: "q", Min: 5, Max: 5},
		"unknown kind": {Kind: "ranking", Question: "q"},
	} {
		_, err := h.a.Decide(context.Background(), req)
		var de *agent.DecideError
		if !errors.As(err, &de) || de.Cause != agent.DecideBadRequest {
			t.Errorf("%s: error = %v, want a bad-request DecideError", name, err)
		}
	}
	if _, err := agent.Decide(context.Background(), &agent.DecideRequest{Kind: agent.DecideProbability, Question: "q"}); !errors.Is(err, agent.ErrUndecided) {
		t.Errorf("Decide outside a run: %v, want ErrUndecided", err)
	}
	if n := len(m.Requests()); n != 0 {
		t.Errorf("%d requests sent for requests that cannot be asked", n)
	}
	if evs := readAll(t, h.store, h.a.Session()); len(evs) != 0 {
		t.Errorf("recorded %d events for refused requests", len(evs))
	}
}

// The decision schema is a JSON object schema that names the options.
func TestDecideSchema(t *testing.T) {
	m, target := decider(llmtest.Reply(`{"choice":"b","reason":""}`))
	h := newHarness(t, &agent.Options{Decider: target})
	if _, err := h.a.Decide(context.Background(), &agent.DecideRequest{Kind: agent.DecideChoice, Question: "q", Options: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Choice struct{ Enum []string }
		}
		Required []string
	}
	if err := json.Unmarshal(m.Requests()[0].ResponseFormat.Schema, &s); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "b"}, s.Properties.Choice.Enum); d != "" {
		t.Errorf("enum (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"choice", "reason"}, s.Required); d != "" {
		t.Errorf("required (-want +got):\n%s", d)
	}
}
