package main

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func TestRunRefusalExitsWithItsExplanation(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			m := llmtest.NewModel(llmtest.Chunks(
				&llm.BlockStart{Index: 0, Kind: llm.BlockText},
				&llm.TextDelta{Index: 0, Text: "I can't help with picking that lock."},
				&llm.BlockEnd{Index: 0},
				&llm.UsageChunk{Usage: llmtest.DefaultUsage},
				&llm.Finish{Reason: llm.FinishFiltered},
			))
			srv := llmtest.NewServer(t, m)
			r := e.run(w.env(), w.args(srv, e, "open the lock")...)
			if r.code != exitStopped {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitStopped, r.stderr)
			}
			for _, s := range []string{"refused or filtered", "I can't help with picking that lock."} {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
				}
			}
		})
	}
}
