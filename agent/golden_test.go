package agent_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/golden"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// fakeClock ticks one second per reading.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

// TestGoldenLog pins the exact log of a turn with a tool round trip, a
// denied call and a hook decision, as the CLI's --json would print it.
func TestGoldenLog(t *testing.T) {
	clock := &fakeClock{t: t0}
	hs := new(hook.Set).ToolGate("no-secrets", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if in.Call.ID == "c2" {
			return &hook.Deny{Reason: "reads secrets"}, nil
		}
		return nil, nil
	})
	h := newHarness(t, &agent.Options{
		Now: clock.now, NewID: func() string { return "run-1" }, Session: "golden",
		System: "Be brief.", Tools: []tool.Tool{echoTool()}, Hooks: hs,
	}, llmtest.CallTools(call("c1", "echo", `{"text":"hi"}`), call("c2", "echo", `{"text":".env"}`)), llmtest.Reply("said hi"))
	h.run("say hi")
	evs := h.events()
	var buf bytes.Buffer
	for _, ev := range evs {
		if r, ok := ev.Data.(*session.ToolResult); ok {
			r.Duration = 0 // wall time
		}
		line, err := session.AppendEventJSON(nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	golden.Check(t, filepath.Join("testdata", "golden_log.jsonl"), buf.Bytes())
}
