package agent_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestB01_SimpleTurnBoundaryOrder(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("hello"))
	res := h.run("hi")
	if res.Text != "hello" || res.Reason != session.EndCompleted {
		t.Fatalf("result = %q %s, want hello completed", res.Text, res.Reason)
	}
	want := []string{"turn.start", "user.message", "step.start", "request.header", "assistant.message", "step.end", "turn.end"}
	if diff := cmp.Diff(want, types(h.events())); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

func TestB06_ToolRoundTrip(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}},
		llmtest.CallTool("c1", "echo", `{"text":"pong"}`),
		llmtest.Reply("done"))
	res := h.run("ping")
	evs := h.events()
	want := []string{"turn.start", "user.message", "step.start", "request.header", "assistant.message", "tool.call", "tool.result", "step.end",
		"step.start", "assistant.message", "step.end", "turn.end"}
	if diff := cmp.Diff(want, types(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s\n%s", diff, dump(evs))
	}
	if res.Steps != 2 || res.Text != "done" {
		t.Errorf("steps=%d text=%q", res.Steps, res.Text)
	}
	reqs := h.m.Requests()
	if !containsText(reqs[1], "result c1: pong") {
		t.Errorf("second request lacks the result: %v", requestTexts(reqs[1]))
	}
	_ = context.Background
}
