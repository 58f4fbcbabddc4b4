package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reinhq/rein/tool"
)

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ttyApprover asks the person at the terminal, reading /dev/tty.
type ttyApprover struct {
	out io.Writer
}

func (t *ttyApprover) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	tty, err := os.Open("/dev/tty")
	if err != nil && req.HookAsked {
		return tool.Approval{Verdict: tool.Deny, Reason: "a hook asks for approval (" + req.Reason + ") and no one can be asked; run at a terminal with --approve ask"}, nil
	}
	if err != nil {
		return tool.Approval{Verdict: tool.Deny, Reason: "no terminal to ask on; use --approve auto or deny"}, nil
	}
	defer tty.Close()
	fmt.Fprintf(t.out, "\nrein: allow %s? [y]es / [n]o / [a]lways for this tool: ", approvalSubject(req))
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(tty).ReadString('\n')
		got <- answer{line, err}
	}()
	var line string
	select {
	case a := <-got:
		if a.err != nil && a.line == "" {
			return tool.Approval{Verdict: tool.Deny, Reason: "no answer"}, nil
		}
		line = a.line
	case <-ctx.Done():
		// Closing the terminal ends the read.
		tty.Close()
		return tool.Approval{Verdict: tool.Deny, Reason: "the turn ended before an answer"}, ctx.Err()
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return tool.Approval{Verdict: tool.Allow, Reason: "approved at the terminal"}, nil
	case "a", "always":
		return tool.Approval{Verdict: tool.Allow, Always: true, Reason: "approved for the session at the terminal"}, nil
	}
	return tool.Approval{Verdict: tool.Deny, Reason: "denied at the terminal"}, nil
}

// approvalSubject names what a call wants to do: the tool and its command
// or path when it has one, else its arguments.
func approvalSubject(req *tool.ApprovalRequest) string {
	what := req.Command
	if what == "" {
		what = req.Path
	}
	if what == "" {
		var args struct {
			Command string `json:"command"`
			Path    string `json:"path"`
		}
		if json.Unmarshal(req.Args, &args) == nil {
			what = args.Command
			if what == "" {
				what = args.Path
			}
		}
	}
	if what == "" {
		what = shortArgs(req.Args)
	}
	return req.Tool + " " + shorten(what, 80)
}

// shorten cuts s to n runes with an ellipsis, on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
