package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reinhq/rein/session"
)

// chatLines is chat without a terminal to draw on: each line read from in
// is a prompt (or /quit, /session), answered as 'rein run' prints, until
// the input ends. Approvals are asked at the terminal when there is one,
// as 'rein run' asks; without one, calls that need approval are denied.
func (a *app) chatLines(ctx context.Context, f *agentFlags, in io.Reader) error {
	interactive := isTerminal(os.Stdin)
	s, err := a.build(ctx, f, &ttyApprover{out: a.stderr}, interactive)
	if err != nil {
		return err
	}
	defer s.closeWith("prompt_input_exit")
	if !interactive {
		fmt.Fprintln(a.stderr, "rein: no terminal: reading one prompt per line from stdin (calls that need approval are denied; use --approve auto to allow them)")
	}
	// A signal cancels the running turn; the chat then ends.
	stop := context.AfterFunc(ctx, func() { s.agent.Cancel("user") })
	defer stop()
	r := newTextRenderer(a.stdout, a.stderr, a.outTTY)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for ctx.Err() == nil {
		if interactive {
			fmt.Fprint(a.stderr, "> ")
		}
		if !sc.Scan() {
			break
		}
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case line == "/quit" || line == "/exit":
			printContinue(a.stderr, s.agent.Session())
			return nil
		case line == "/session":
			fmt.Fprintf(a.stderr, "session %s\n", s.agent.Session())
			continue
		case strings.HasPrefix(line, "/"):
			fmt.Fprintf(a.stderr, "rein: %s works in the terminal UI only; here a line is a prompt, /session or /quit\n", strings.Fields(line)[0])
			continue
		}
		lineTurn(s, r, line, a.stderr)
	}
	printContinue(a.stderr, s.agent.Session())
	return sc.Err()
}

// lineTurn runs one prompt, showing its events with r and its errors
// on info.
func lineTurn(s *setup, r renderer, prompt string, info io.Writer) {
	req := s.request(prompt)
	req.Children = true // subagents' progress shows as it happens
	for ev, err := range s.agent.Stream(context.Background(), req) {
		if err != nil {
			fmt.Fprintf(info, "rein: %v\n", err)
			break
		}
		if ev.ParentRun != "" {
			s.kids.show(r, ev)
			continue
		}
		if end, ok := ev.Data.(*session.TurnEnd); ok && end.Reason != session.EndCompleted {
			defer fmt.Fprintf(info, "rein: the turn ended: %s %s\n", end.Reason, end.Message)
		}
		r.event(ev)
	}
	r.flush()
}
