package mcp

import (
	"strings"
	"sync"
)

// tailBuffer keeps the end of a server's stderr and logs its lines.
type tailBuffer struct {
	name string
	log  interface {
		Debug(msg string, args ...any)
	}
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 4096 {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-4096:]...)
	}
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			b.log.Debug("mcp: server stderr", "server", b.name, "line", line)
		}
	}
	return len(p), nil
}

func (b *tailBuffer) lastLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
