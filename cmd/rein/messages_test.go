package main

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func TestRunMessagesNameTheFlags(t *testing.T) {
	t.Run("max-cost", func(t *testing.T) {
		e := newEnv(t)
		w := wires[0]
		// 40,000 input tokens of claude-sonnet-4-5 at $3 a million: $0.12.
		m := llmtest.NewModel(
			llmtest.CallTool("c1", "ls", `{"path":"."}`).WithUsage(llm.Usage{Input: 40000}),
			llmtest.Reply("never sent"),
		)
		srv := llmtest.NewServer(t, m)
		r := e.run(w.env(), w.args(srv, e, "--max-cost", "0.1", "list")...)
		if r.code != exitStopped {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "raise --max-cost ($0.12 used of $0.10)") || strings.Contains(r.stderr, "Limits.") {
			t.Errorf("stderr:\n%s", r.stderr)
		}
	})
	t.Run("too long", func(t *testing.T) {
		e := newEnv(t)
		w := wires[0]
		var entries []llmtest.Entry
		for range 12 {
			entries = append(entries, llmtest.Fail(&llm.ProviderError{Kind: llm.ErrContextTooLong}))
		}
		srv := llmtest.NewServer(t, llmtest.NewModel(entries...))
		r := e.run(w.env(), w.args(srv, e, "a long prompt")...)
		if r.code != exitError {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		for _, s := range []string{"/compact", "start a new session", "--model"} {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
			}
		}
		for _, s := range []string{"KeepSteps", "Agent.Compact"} {
			if strings.Contains(r.stderr, s) {
				t.Errorf("stderr names the library's %s:\n%s", s, r.stderr)
			}
		}
	})
}
