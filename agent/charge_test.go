package agent_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// A completion charged to the run from a tool (an MCP server's sampling,
// say) counts toward the cost budget: the next step boundary ends the
// turn on it, and the run's totals hold it.
func TestChargeCountsTowardTheBudget(t *testing.T) {
	sample := funcTool("sample", func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		if !agent.RunningAgent(ctx).Charge("sampler", llm.Usage{Input: 1000, Output: 100}, 0.6) {
			t.Error("Charge within a run reported no run in flight")
		}
		return tool.Text("sampled"), nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{sample}, Limits: agent.Limits{MaxCost: 0.5},
		Cost: func(string, llm.Usage) float64 { return 0.01 }},
		llmtest.CallTool("c1", "sample", `{}`), llmtest.Reply("never asked"))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if res == nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Reason != session.EndBudget {
		t.Errorf("reason = %s (%v), want budget", res.Reason, err)
	}
	if n := len(h.m.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1: the charge stops the second", n)
	}
	if got := res.Total.ByModel["sampler"]; got.Cost != 0.6 || got.Usage.Input != 1000 {
		t.Errorf("totals for the charged model = %+v", got)
	}
	if res.Total.Cost < 0.61 || res.Cost > 0.02 {
		t.Errorf("run cost %g, total %g: the charge belongs in the total only", res.Cost, res.Total.Cost)
	}
	if h.a.Charge("sampler", llm.Usage{Input: 1}, 1) {
		t.Error("Charge while idle reported a run")
	}
}

// A decision made within a run is part of the run's totals.
func TestDecideChargesTheRun(t *testing.T) {
	_, target := decider(llmtest.Reply(`{"probability":0.2,"reason":"flaky"}`).WithUsage(llm.Usage{Input: 30, Output: 6}))
	judge := funcTool("judge", func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		if _, err := agent.Decide(ctx, &agent.DecideRequest{Kind: agent.DecideProbability, Question: "it is flaky"}); err != nil {
			t.Errorf("Decide: %v", err)
		}
		return tool.Text("judged"), nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{judge}, Decider: target},
		llmtest.CallTool("c1", "judge", `{}`), llmtest.Reply("done"))
	res := h.run("judge")
	if got := res.Total.ByModel["cheap"]; got.Usage != (llm.Usage{Input: 30, Output: 6}) {
		t.Errorf("the decision model's totals = %+v, want its usage", got)
	}
}
