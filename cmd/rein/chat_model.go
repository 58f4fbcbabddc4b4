package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

type eventMsg struct{ ev session.Event }
type runDoneMsg struct{ err error }
type tickMsg struct{}
type compactDoneMsg struct {
	res *agent.CompactResult
	err error
}

// chatModel is the chat UI: the transcript, the editor below it and the
// status line.
type chatModel struct {
	app   *app
	flags *agentFlags
	setup *setup
	ap    *chatApprover
	send  func(tea.Msg)

	blocks   []block
	firstNew int     // the first block this chat added (after a resumed history)
	top      *anchor // the first line shown when scrolled back; nil follows the end
	md       markdown

	ed            editor
	running       bool
	queued        []string // prompts typed while a turn was ending
	approval      *approvalMsg
	form          *elicitForm
	confirmQuit   bool // Ctrl+C was pressed once on an idle prompt
	showReasoning bool
	expandTools   bool
	width, height int

	usage    llm.Usage // the session's totals
	cost     float64
	lastIn   int64 // the last request's prompt tokens
	stepText bool  // text streamed in the current step
}

func newChatModel(a *app, f *agentFlags, s *setup, ap *chatApprover) *chatModel {
	m := &chatModel{app: a, flags: f, setup: s, ap: ap, width: 80, height: 24, ed: newEditor()}
	m.md.dark = true
	return m
}

// loadHistory shows a resumed session's transcript.
func (m *chatModel) loadHistory(ctx context.Context) error {
	events, err := collect(m.setup.store.Events(ctx, m.setup.agent.Session(), 0))
	if err != nil {
		return err
	}
	for _, ev := range events {
		m.apply(ev)
	}
	if len(events) > 0 {
		noun := "events"
		if len(events) == 1 {
			noun = "event"
		}
		m.notice(fmt.Sprintf("resumed session %s (%d %s)", m.setup.agent.Session(), len(events), noun))
	}
	m.firstNew = len(m.blocks)
	return nil
}

func (m *chatModel) Init() tea.Cmd { return tea.RequestBackgroundColor }

func tick() tea.Cmd {
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *chatModel) notice(s string) { m.blocks = append(m.blocks, block{kind: blockNotice, text: s}) }

func (m *chatModel) fail(s string) { m.blocks = append(m.blocks, block{kind: blockError, text: s}) }

// startRun runs prompt on a goroutine that feeds events to the UI.
func (m *chatModel) startRun(prompt string) tea.Cmd {
	m.running = true
	m.top = nil
	m.blocks = append(m.blocks, block{kind: blockUser, text: prompt})
	ag, send, req := m.setup.agent, m.send, m.setup.request(prompt)
	req.Children = true // subagents' progress shows as it happens
	kids, text := &m.setup.kids, m.childText()
	go func() {
		var runErr error
		for ev, err := range ag.Stream(context.Background(), req) {
			if err != nil {
				runErr = err
				break
			}
			if ev.ParentRun != "" {
				kids.show(text, ev)
				continue
			}
			send(eventMsg{ev})
		}
		send(runDoneMsg{runErr})
	}()
	return tick()
}

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.ed.setWidth(m.width)
	case tea.BackgroundColorMsg:
		m.md.setDark(msg.IsDark())
	case eventMsg:
		m.apply(msg.ev)
	case childLineMsg:
		m.blocks = append(m.blocks, block{kind: blockChild, text: msg.line})
	case runDoneMsg:
		return m, m.runDone(msg.err)
	case compactDoneMsg:
		m.compactDone(msg)
	case tickMsg:
		if m.running {
			return m, tick()
		}
	case approvalMsg:
		m.approval = &msg
	case elicitMsg:
		m.openForm(msg)
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.PasteMsg:
		m.confirmQuit = false
		m.ed.paste(msg.Content)
	case tea.MouseWheelMsg:
		switch msg.Mouse().Button {
		case tea.MouseWheelUp:
			m.scrollUp(3)
		case tea.MouseWheelDown:
			m.scrollDown(3)
		}
	}
	return m, nil
}

// runDone ends a turn and starts the prompts queued meanwhile.
func (m *chatModel) runDone(err error) tea.Cmd {
	m.running = false
	if err != nil {
		m.fail("error: " + err.Error())
	}
	if len(m.queued) > 0 {
		next := strings.Join(m.queued, "\n")
		m.queued = nil
		return m.startRun(next)
	}
	return nil
}

func (m *chatModel) compactDone(msg compactDoneMsg) {
	m.running = false
	switch {
	case errors.Is(msg.err, agent.ErrNothingToCompact):
		m.notice("nothing to compact yet")
	case msg.err != nil:
		m.fail("compact: " + msg.err.Error())
	default:
		m.notice(fmt.Sprintf("compacted events %d–%d: about %s → %s tokens", msg.res.FromSeq, msg.res.ToSeq, compact(msg.res.TokensBefore), compact(msg.res.TokensAfter)))
	}
}

// status is the status line: state, model, tokens, cost, cache reads,
// context fill.
func (m *chatModel) status() string {
	state := "ready"
	switch {
	case m.running:
		state = "working (Esc cancels)"
	case m.form != nil:
		state = "answering a form"
	}
	if m.top != nil {
		state += " · scrolled back (PgDn returns)"
	}
	u := m.usage
	parts := []string{state, m.setup.target.String()}
	parts = append(parts, fmt.Sprintf("%s in / %s out", compact(u.PromptTokens()), compact(u.Output)))
	parts = append(parts, fmt.Sprintf("$%.4f", m.cost))
	if p := u.PromptTokens(); p > 0 {
		parts = append(parts, fmt.Sprintf("cache %d%%", u.CacheRead*100/p))
	}
	if info, ok := llm.DefaultCatalog().Lookup(m.setup.target.model); ok && info.ContextWindow > 0 {
		parts = append(parts, fmt.Sprintf("ctx %d%%", m.lastIn*100/int64(info.ContextWindow)))
	}
	return " " + strings.Join(parts, " · ")
}

func compact(n int64) string {
	if n >= 10_000 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
