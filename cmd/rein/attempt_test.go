package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// On a terminal a failed attempt's streamed text is erased when the retry
// starts: the screen shows the answer once, and the run ends with its
// one-line summary.
func TestRunRetriedStreamErasedOnTerminal(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "PARTIAL-ONE-"}),
		llmtest.Reply("Second attempt."),
	)
	srv := llmtest.NewServer(t, m)
	s := startTmux(t, e, w.env(), w.args(srv, e, "--stall-timeout", "1s", "hello")...)
	scr := s.waitFor("[exit 0]")
	if strings.Contains(scr, "PARTIAL-ONE-") {
		t.Errorf("the failed attempt's text is still on the screen:\n%s", scr)
	}
	if n := strings.Count(scr, "Second attempt."); n != 1 {
		t.Errorf("the answer is on the screen %d times:\n%s", n, scr)
	}
	if !strings.Contains(scr, "erased and discarded") {
		t.Errorf("no note of the discarded attempt:\n%s", scr)
	}
	if !regexp.MustCompile(`1 step · [0-9,]+ tokens \([0-9,]+ in, [0-9,]+ out\) · \$[0-9.]+ · [0-9.]+m?s`).MatchString(scr) {
		t.Errorf("no summary line (steps, tokens, cost, time):\n%s", scr)
	}
}

// A pipe gets no summary line: stderr ends with the session id.
func TestRunNoSummaryOffTerminal(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Reply("Hi.")))
	r := e.run(w.env(), w.args(srv, e, "hello")...)
	if r.code != 0 || strings.Contains(r.stderr, "tokens") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestCursorRow(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"abcdefghij", 0}, // fills the row: the cursor waits to wrap
		{"abcdefghijk", 1},
		{"abc\n", 1},
		{"abcdefghij\n", 1},
		{"abcdefghijk\nx", 2},
		{"\n\n\n", 3},
		{"日本語日本", 0}, // five wide runes fill ten columns
		{"日本語日本語", 1},
	} {
		if got := cursorRow(c.text, 10); got != c.want {
			t.Errorf("cursorRow(%q, 10) = %d, want %d", c.text, got, c.want)
		}
	}
}

func TestSummaryLine(t *testing.T) {
	tl := &tally{steps: 1, usage: llm.Usage{Input: 1200, Output: 34}, cost: 0.0123}
	got := summaryLine(tl, 4210*1e6)
	if diff := cmp.Diff("1 step · 1,234 tokens (1,200 in, 34 out) · $0.0123 · 4.2s", got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
