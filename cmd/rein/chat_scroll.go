package main

// The transcript scrolls on the alternate screen: the UI keeps the place
// of the first line shown (a block and a line in it) and renders from
// there, so a frame costs the lines on the screen, never the session's
// length. With no place kept it follows the end, as an answer streams.

// anchor is a line of the transcript: block's line'th rendered line.
type anchor struct{ block, line int }

func (a anchor) before(b anchor) bool {
	return a.block < b.block || a.block == b.block && a.line < b.line
}

// room is how many transcript lines fit above the editor.
func (m *chatModel) room() int { return max(m.height-len(m.bottom(max(m.width, 20))), 1) }

// endTop is the first line shown when following the end.
func (m *chatModel) endTop(room int) anchor {
	n := 0
	for i := len(m.blocks) - 1; i >= 0; i-- {
		l := len(m.lines(i))
		if n+l >= room {
			return anchor{i, n + l - room}
		}
		n += l
	}
	return anchor{}
}

// window is up to room lines from a.
func (m *chatModel) window(a anchor, room int) []string {
	out := make([]string, 0, room)
	for i := a.block; i < len(m.blocks) && len(out) < room; i++ {
		ls := m.lines(i)
		if i == a.block {
			ls = ls[min(a.line, len(ls)):]
		}
		out = append(out, ls...)
	}
	return out
}

// back is the line k lines above a, or the first line.
func (m *chatModel) back(a anchor, k int) anchor {
	for k > 0 {
		if a.line >= k {
			a.line -= k
			return a
		}
		k -= a.line
		if a.block == 0 {
			return anchor{}
		}
		a.block--
		a.line = len(m.lines(a.block))
	}
	return a
}

// forward is the line k lines below a, or the end.
func (m *chatModel) forward(a anchor, k int) anchor {
	for k > 0 && a.block < len(m.blocks) {
		l := len(m.lines(a.block))
		if a.line+k < l {
			a.line += k
			return a
		}
		k -= l - a.line
		a.block++
		a.line = 0
	}
	return a
}

// scrollUp moves the view k lines towards the start of the transcript.
func (m *chatModel) scrollUp(k int) {
	start := m.endTop(m.room())
	if m.top != nil {
		start = *m.top
	}
	if start == (anchor{}) {
		return // all of it is on the screen already, or the top is
	}
	a := m.back(start, k)
	m.top = &a
}

// scrollDown moves the view k lines towards the end; reaching it, the
// view follows the end again.
func (m *chatModel) scrollDown(k int) {
	if m.top == nil {
		return
	}
	a := m.forward(*m.top, k)
	if !a.before(m.endTop(m.room())) {
		m.top = nil
		return
	}
	m.top = &a
}
