package main

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

func (m *chatModel) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.form != nil {
		m.formKey(k)
		return m, nil
	}
	if m.approval != nil {
		m.approvalKey(k)
		return m, nil
	}
	ks := k.String()
	if ks != "ctrl+c" {
		m.confirmQuit = false
	}
	if m.scrollKey(ks) {
		return m, nil
	}
	switch ks {
	case "ctrl+c":
		return m, m.interrupt()
	case "ctrl+d":
		if m.ed.empty() {
			return m, tea.Quit
		}
	case "esc":
		if m.running {
			m.setup.agent.Cancel("user")
		}
		return m, nil
	case "ctrl+r":
		m.showReasoning = !m.showReasoning
		return m, nil
	case "ctrl+o":
		m.expandTools = !m.expandTools
		return m, nil
	case "enter":
		return m.submit()
	}
	m.ed.key(k)
	return m, nil
}

// scrollKey moves the transcript for the keys that scroll it.
func (m *chatModel) scrollKey(ks string) bool {
	page := max(m.room()-1, 1)
	switch ks {
	case "pgup":
		m.scrollUp(page)
	case "pgdown":
		m.scrollDown(page)
	case "shift+up":
		m.scrollUp(1)
	case "shift+down":
		m.scrollDown(1)
	default:
		return false
	}
	return true
}

// interrupt is Ctrl+C: it cancels a running turn; on an idle prompt it
// clears the input, or asks before quitting and quits when pressed again.
func (m *chatModel) interrupt() tea.Cmd {
	switch {
	case m.running:
		m.setup.agent.Cancel("user")
	case !m.ed.empty():
		m.ed.reset()
	case m.confirmQuit:
		return tea.Quit
	default:
		m.confirmQuit = true
	}
	return nil
}

// submit sends the editor's text: a command, a steer of the running
// turn, or the next prompt.
func (m *chatModel) submit() (tea.Model, tea.Cmd) {
	text := strings.TrimSpace(m.ed.value())
	if text == "" {
		return m, nil
	}
	m.ed.submitted(text)
	if strings.HasPrefix(text, "/") {
		return m.command(text)
	}
	if m.running {
		if m.setup.agent.Steer(&llm.Text{Text: text}) {
			m.notice("steer queued: " + shorten(text, 60))
		} else {
			m.queued = append(m.queued, text)
			m.notice("queued for the next turn: " + shorten(text, 60))
		}
		return m, nil
	}
	return m, m.startRun(text)
}

func (m *chatModel) approvalKey(k tea.KeyPressMsg) {
	switch k.String() {
	case "y", "Y", "enter":
		m.answer(tool.Approval{Verdict: tool.Allow, Reason: "approved in chat"})
	case "n", "N":
		m.answer(tool.Approval{Verdict: tool.Deny, Reason: "denied in chat"})
	case "a", "A":
		scope := m.approval.req.Tool
		if cmd := m.approval.req.Command; cmd != "" {
			scope = strings.Fields(cmd)[0]
		}
		m.answer(tool.Approval{Verdict: tool.Allow, Always: true, Scope: scope, Reason: "approved for the session in chat"})
	case "esc", "ctrl+c":
		m.answer(tool.Approval{Verdict: tool.Deny, Reason: "denied in chat"})
		m.setup.agent.Cancel("user")
	}
}

func (m *chatModel) answer(ap tool.Approval) {
	m.approval.reply <- ap
	verdict := "denied"
	if ap.Verdict == tool.Allow {
		verdict = "allowed"
		if ap.Always {
			verdict = "allowed for the session"
		}
	}
	m.notice(fmt.Sprintf("%s %s", approvalSubject(m.approval.req), verdict))
	m.approval = nil
}
