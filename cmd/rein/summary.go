package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// terminals reports stdout's file when it is a terminal, and whether
// stderr is one.
func terminals(stdout, stderr io.Writer) (*os.File, bool) {
	var out *os.File
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		out = f
	}
	f, ok := stderr.(*os.File)
	return out, ok && isTerminal(f)
}

// summaryLine is the one line 'rein run' ends with on a terminal: steps,
// tokens, cost and time.
func summaryLine(t *tally, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s · %s tokens (%s in, %s out)", plural(t.steps, "step"), thousands(t.usage.Total()), thousands(t.usage.PromptTokens()), thousands(t.usage.Output))
	if t.cost > 0 {
		fmt.Fprintf(&b, " · $%.4f", t.cost)
	}
	fmt.Fprintf(&b, " · %s", took.Round(100*time.Millisecond))
	return b.String()
}

// plural is "1 step", "2 steps": n and noun, with an s unless n is one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
