package mcp

import (
	"context"
	"errors"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// watch waits for a connection to end; one the Manager did not close is a
// drop, followed by reconnection in the background.
func (s *server) watch(cs *sdk.ClientSession) {
	defer s.m.wg.Done()
	err := cs.Wait()
	if err == nil {
		err = errors.New("the server closed the connection")
	}
	s.dropped(cs, err)
}

// dropped retires a connection found dead (by its watcher or by a call
// that failed on it) and starts reconnecting. Only the first report for a
// connection counts.
func (s *server) dropped(cs *sdk.ClientSession, err error) {
	s.mu.Lock()
	if s.cs != cs {
		s.mu.Unlock()
		return
	}
	pid := s.pid
	s.cs, s.pid, s.client = nil, 0, nil
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.state, s.lastErr = StateDown, err
	start := !s.reconnects
	if start {
		s.reconnects = true
		s.m.wg.Add(1)
	}
	s.mu.Unlock()
	s.shutdown(cs, pid)
	s.m.emit(&Disconnected{Server: s.cfg.Name, Err: err})
	if start {
		go s.reconnectLoop()
	}
}

// reconnectLoop retries a dropped connection with backoff, a bounded
// number of times; calls after that connect on demand.
func (s *server) reconnectLoop() {
	defer s.m.wg.Done()
	defer func() {
		s.mu.Lock()
		s.reconnects = false
		s.mu.Unlock()
	}()
	for i := 1; i <= s.m.opts.Backoff.attempts(); i++ {
		select {
		case <-s.m.done:
			return
		case <-time.After(s.m.backoff(i)):
		}
		ctx, cancel := context.WithCancel(s.m.ctx)
		_, err := s.ensure(ctx)
		cancel()
		if err == nil || errors.Is(err, ErrClosed) {
			return
		}
		s.m.log.Debug("mcp: reconnect failed", "server", s.cfg.Name, "attempt", i, "err", err)
	}
}

// shutdown closes a session and ends what is left of its process group.
func (s *server) shutdown(cs *sdk.ClientSession, pid int) {
	if cs != nil {
		_ = cs.Close()
		s.mu.Lock()
		stop := s.stops[cs]
		delete(s.stops, cs)
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
	}
	killGroup(pid)
}

// close ends the server's connection for good.
func (s *server) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	cs, pid := s.cs, s.pid
	s.cs, s.pid, s.client = nil, 0, nil
	s.state = StateClosed
	ch := s.connecting
	s.mu.Unlock()
	if ch != nil {
		<-ch // the attempt sees closed and shuts its connection down
	}
	s.shutdown(cs, pid)
	s.m.emit(&Closed{Server: s.cfg.Name})
}

// refresh lists the tools again after tools/list_changed.
func (s *server) refresh(ctx context.Context) {
	cs, err := s.ensure(ctx)
	if err != nil {
		return
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		s.m.log.Debug("mcp: refreshing tools failed", "server", s.cfg.Name, "err", err)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	old := s.names()
	s.setToolsLocked(tools)
	names := s.names()
	s.mu.Unlock()
	s.m.saveToolCache(s.cfg.Name, tools)
	s.m.toolsChanged() // descriptions and schemas may have changed too
	if !slices.Equal(old, names) {
		s.m.emit(&ToolsChanged{Server: s.cfg.Name, Tools: names})
	}
}

// refreshLater lists a server's tools again in the background; it is
// called from the SDK's notification handler, which must not block.
func (m *Manager) refreshLater(s *server) {
	m.closeMu.Lock()
	if m.closed {
		m.closeMu.Unlock()
		return
	}
	m.wg.Add(1)
	m.closeMu.Unlock()
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, s.connectTimeout())
		defer cancel()
		s.refresh(ctx)
	}()
}

// backoff is the delay before attempt n (1-based).
func (m *Manager) backoff(n int) time.Duration {
	b := m.opts.Backoff
	d, max := b.Initial, b.Max
	if d <= 0 {
		d = 250 * time.Millisecond
	}
	if max <= 0 {
		max = 30 * time.Second
	}
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

func (b Backoff) attempts() int {
	if b.Attempts > 0 {
		return b.Attempts
	}
	return 8
}
