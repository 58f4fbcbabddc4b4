package main

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

var (
	styleUser     = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleNotice   = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleOK       = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleWarn     = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	styleHeading  = lipgloss.NewStyle().Bold(true)
	styleAdd      = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleDel      = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleStatus   = lipgloss.NewStyle().Reverse(true)
	styleApproval = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
)

// emptyHint fills the screen of a chat with nothing in it yet.
const emptyHint = "Type a prompt and press Enter to send it. Alt+Enter or Ctrl+J adds a line, Up recalls\n" +
	"earlier prompts, PgUp scrolls back, /help lists commands, Ctrl+C twice quits."

// View renders the visible part of the transcript, the editor (or the
// question being asked) and the status line.
func (m *chatModel) View() tea.View {
	w := max(m.width, 20)
	bottom := m.bottom(w)
	room := max(m.height-len(bottom), 1)
	var lines []string
	switch {
	case len(m.blocks) == 0:
		lines = strings.Split(lipgloss.NewStyle().Width(w).Render(styleNotice.Render(emptyHint)), "\n")
	case m.top != nil:
		lines = m.window(*m.top, room)
	default:
		lines = m.window(m.endTop(room), room)
	}
	if len(lines) > room {
		lines = lines[:room]
	}
	for len(lines) < room {
		lines = append(lines, "")
	}
	v := tea.NewView(strings.Join(append(lines, bottom...), "\n"))
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	return v
}

// bottom is what sits below the transcript: a question being asked, the
// editor and the status line.
func (m *chatModel) bottom(w int) []string {
	var out []string
	switch {
	case m.form != nil:
		out = append(out, m.form.view(w)...)
	case m.approval != nil:
		out = append(out, styleApproval.Render("Allow "+approvalSubject(m.approval.req)+"?  [y]es  [n]o  [a]lways"))
	case m.confirmQuit:
		out = append(out, styleApproval.Render("Quit rein chat? Press Ctrl+C again to quit, any other key to stay."))
	}
	out = append(out, strings.Split(m.ed.view(), "\n")...)
	return append(out, styleStatus.Render(padRight(m.status(), w)))
}

func padRight(s string, w int) string {
	if n := lipgloss.Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// lines is block i rendered at the screen's width, cached until the block,
// the width or a display toggle changes.
func (m *chatModel) lines(i int) []string {
	w := max(m.width, 20)
	b := &m.blocks[i]
	if b.lines == nil || b.linesW != w || b.linesR != m.showReasoning || b.linesX != m.expandTools || b.status == "running" {
		b.lines, b.linesW, b.linesR, b.linesX = m.renderBlock(b, w), w, m.showReasoning, m.expandTools
	}
	return b.lines
}

func (m *chatModel) renderBlock(b *block, w int) []string {
	wrap := func(s string) []string {
		return strings.Split(lipgloss.NewStyle().Width(w).Render(s), "\n")
	}
	switch b.kind {
	case blockUser:
		return append([]string{""}, wrap(styleUser.Render("you: ")+b.text)...)
	case blockAssistant:
		if !b.done {
			return m.streaming(b, w)
		}
		return m.md.render(b.text, w)
	case blockReasoning:
		if !m.showReasoning {
			return []string{styleDim.Render(fmt.Sprintf("▸ reasoning (%d chars, Ctrl+R to show)", len(b.text)))}
		}
		out := []string{styleDim.Render("▾ reasoning")}
		for _, l := range wrap(strings.TrimSpace(b.text)) {
			out = append(out, styleDim.Render(l))
		}
		return out
	case blockTool:
		return m.toolCard(b, w)
	case blockNotice:
		return wrap(styleNotice.Render("· " + b.text))
	case blockChild:
		return wrap(styleNotice.Render(b.text))
	case blockError:
		return wrap(styleError.Render(b.text))
	}
	return nil
}

// streaming renders an answer still being written: its whole paragraphs
// as Markdown, rendered again only when another one is complete, and the
// paragraph being written wrapped as it comes.
func (m *chatModel) streaming(b *block, w int) []string {
	cut := paragraphsEnd(b.text)
	if cut != b.mdCut || w != b.mdW || b.md == nil {
		b.md, b.mdCut, b.mdW = nil, cut, w
		if cut > 0 {
			b.md = m.md.render(b.text[:cut], w)
		}
	}
	out := append([]string(nil), b.md...)
	tail := strings.TrimRight(b.text[cut:], "\n")
	if tail == "" {
		return out
	}
	if len(out) > 0 {
		out = append(out, "")
	}
	return append(out, strings.Split(lipgloss.NewStyle().Width(w).Render(tail), "\n")...)
}

// paragraphsEnd is where the whole paragraphs of s end: after its last
// blank line outside a code fence.
func paragraphsEnd(s string) int {
	end, fenced, pos := 0, false, 0
	for line := range strings.SplitSeq(s, "\n") {
		next := pos + len(line) + 1
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fenced = !fenced
		case trimmed == "" && !fenced && next <= len(s):
			end = next
		}
		pos = next
	}
	return end
}
