package main

import (
	"bytes"
	"io"
	"sync"

	tea "charm.land/bubbletea/v2"
)

// childLineMsg is a line of a subagent's progress, as 'rein run' prints
// it: its calls and its end, indented under its name.
type childLineMsg struct{ line string }

// childText is where the subagents' progress goes in the transcript:
// their events go through the run's own child view, whose text lines
// become transcript lines.
func (m *chatModel) childText() *textRenderer {
	return newTextRenderer(io.Discard, &lineSender{send: m.send}, nil)
}

// lineSender sends each whole line written to it to the UI.
type lineSender struct {
	mu   sync.Mutex
	send func(tea.Msg)
	buf  []byte
}

func (l *lineSender) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		if l.send != nil {
			l.send(childLineMsg{line: line})
		}
	}
}
