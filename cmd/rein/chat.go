package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func init() { extraCommands = append(extraCommands, (*app).chatCommand) }

func (a *app) chatCommand() *cobra.Command {
	f := &agentFlags{}
	var cont bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the agent in an interactive terminal UI",
		Long: `Chat opens an interactive session: answers stream as they are written,
tool calls appear as cards with their output, and calls that need approval
ask inline (y yes, n no, a always for this tool or command).

Keys: Enter sends (while the agent works it steers the running turn);
Alt+Enter or Ctrl+J starts a new line; Up and Down recall earlier prompts;
PgUp, PgDn, Shift+Up, Shift+Down and the mouse wheel scroll the transcript
(hold Shift to select text with the mouse); Ctrl+O shows or hides tool
output in full; Ctrl+R shows or hides reasoning; Esc cancels the turn;
Ctrl+C cancels the turn, clears the input, or (pressed twice) quits.
Commands: /help, /model [PROVIDER/NAME], /session, /compact [FOCUS], /clear, /quit.

Without a terminal (stdin or stdout redirected) chat reads one prompt per
line from stdin and prints the answers as 'rein run' does.`,
		Args: exactArgs(0, "no arguments (type prompts in the UI)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cont {
				if err := a.continueLatest(cmd.Context(), f); err != nil {
					return err
				}
			}
			if !isTerminal(os.Stdin) || !isTerminal(os.Stdout) {
				return a.chatLines(cmd.Context(), f, os.Stdin)
			}
			return a.chat(cmd.Context(), f)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&cont, "continue", "c", false, "resume the workspace's latest session")
	return cmd
}

// chatApprover forwards approval and input requests to the UI and waits
// for the answer.
type chatApprover struct {
	mu   sync.Mutex
	send func(tea.Msg)
	// gone is closed when the UI has ended: questions still waiting are
	// answered no, so a tool blocked on one lets the agent close.
	gone chan struct{}
}

// ended stops forwarding questions to the UI and answers those waiting.
func (c *chatApprover) ended() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.send = nil
	close(c.gone)
}

type approvalMsg struct {
	req   *tool.ApprovalRequest
	reply chan tool.Approval
}

func (c *chatApprover) sender() func(tea.Msg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.send
}

func (c *chatApprover) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	send := c.sender()
	if send == nil {
		return tool.Approval{Verdict: tool.Deny, Reason: "no one to ask"}, nil
	}
	reply := make(chan tool.Approval, 1)
	send(approvalMsg{req: req, reply: reply})
	select {
	case ap := <-reply:
		return ap, nil
	case <-c.gone:
		return tool.Approval{Verdict: tool.Deny, Reason: "the chat ended before an answer"}, nil
	case <-ctx.Done():
		return tool.Approval{Verdict: tool.Deny, Reason: "the turn ended before an answer"}, ctx.Err()
	}
}

// Elicit shows an MCP server's request for input as a form in the UI and
// waits for the person's answer.
func (c *chatApprover) Elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	send := c.sender()
	if send == nil {
		return declineElicit(ctx, req)
	}
	reply := make(chan *mcp.ElicitResult, 1)
	send(elicitMsg{req: req, reply: reply})
	select {
	case res := <-reply:
		return res, nil
	case <-c.gone:
		return &mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: "the chat ended before an answer"}, nil
	case <-ctx.Done():
		return &mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: "the turn ended before an answer"}, nil
	}
}

func (a *app) chat(ctx context.Context, f *agentFlags) error {
	ap := &chatApprover{gone: make(chan struct{})}
	s, err := a.build(ctx, f, ap, true)
	if err != nil {
		return err
	}
	m := newChatModel(a, f, s, ap)
	defer func() { m.setup.closeWith("prompt_input_exit") }()
	if err := m.loadHistory(ctx); err != nil {
		return err
	}
	m.ed.loadHistory(historyPath())
	p := tea.NewProgram(m, tea.WithContext(context.WithoutCancel(ctx)), tea.WithoutSignalHandler())
	ap.mu.Lock()
	ap.send = p.Send
	ap.mu.Unlock()
	m.send = p.Send
	// A signal (the terminal closed, SIGTERM) ends the chat: the program
	// stops, and closing the agent ends a running turn, recorded.
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		select {
		case <-ctx.Done():
			p.Kill()
		case <-ran:
		}
	}()
	_, err = p.Run()
	ap.ended()
	if errors.Is(err, tea.ErrProgramKilled) {
		err = nil
	}
	if err == nil {
		m.printTranscript(a.stdout)
	}
	printContinue(a.stderr, m.setup.agent.Session())
	return err
}

// printContinue says which session the chat wrote and how to go on with it.
func printContinue(w io.Writer, id session.ID) {
	fmt.Fprintf(w, "session %s\ncontinue it with: rein chat --session %s  (or rein run -c \"...\")\n", id, id)
}

// printTranscript leaves what this chat showed in the terminal's own
// scrollback once the full-screen UI is gone: the blocks added since it
// opened, as they were last drawn, without the resumed history.
func (m *chatModel) printTranscript(w io.Writer) {
	var b strings.Builder
	for i := m.firstNew; i < len(m.blocks); i++ {
		for _, l := range m.lines(i) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	io.WriteString(w, b.String())
}
