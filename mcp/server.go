package mcp

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server states, as reported by Manager.Servers.
const (
	StateIdle       = "idle"       // not connected yet
	StateLazy       = "lazy"       // tools from the cache; connects on the first call
	StateConnecting = "connecting" // a connection attempt is in flight
	StateConnected  = "connected"
	StateDown       = "down" // the last attempt failed or the connection dropped
	StateClosed     = "closed"
)

// server is one configured server and its connection.
type server struct {
	m   *Manager
	cfg ServerConfig

	mu         sync.Mutex
	cs         *sdk.ClientSession
	client     *sdk.Client // of the live connection, for roots changes
	pid        int
	state      string
	lastErr    error
	connecting chan struct{} // closed when the attempt in flight ends
	failures   int
	nextTry    time.Time
	everUp     bool
	lazyFirst  bool // the next connect is the deferred one of a lazy server
	raw        []ToolInfo
	warn       []string         // about the last tool list
	tools      []*Tool          // after filtering, in server order
	byName     map[string]*Tool // by the server's tool name
	protocol   string
	instr      string
	stderr     *tailBuffer
	reconnects bool // a background reconnect loop is running
	closed     bool
	stops      map[*sdk.ClientSession]func() // ends each live connection's context
}

func newServer(m *Manager, cfg ServerConfig) *server {
	return &server{m: m, cfg: cfg, state: StateIdle, byName: map[string]*Tool{}, stops: map[*sdk.ClientSession]func(){}}
}

// connectTimeout is the bound on one connection attempt.
func (s *server) connectTimeout() time.Duration {
	if s.cfg.ConnectTimeout > 0 {
		return s.cfg.ConnectTimeout
	}
	return 30 * time.Second
}

// bootstrap connects (or loads the cache, for a lazy server) and lists the
// tools. It reports through a BootstrapEnd event.
func (s *server) bootstrap(ctx context.Context) error {
	start := time.Now()
	ev := &BootstrapEnd{Server: s.cfg.Name, Transport: s.cfg.transport()}
	cached := s.cfg.CachedTools
	if s.cfg.Lazy && len(cached) == 0 {
		cached = s.m.loadToolCache(s.cfg.Name)
	}
	if s.cfg.Lazy && len(cached) > 0 {
		s.mu.Lock()
		if s.cs == nil && s.state != StateClosed {
			s.state = StateLazy
			s.lazyFirst = true
		}
		ev.Warnings = s.setToolsLocked(cached)
		ev.ToolCount = len(s.tools)
		s.mu.Unlock()
		ev.OK, ev.Lazy, ev.Cached = true, true, true
		ev.Duration = time.Since(start)
		s.m.toolsChanged()
		s.m.emit(ev)
		return nil
	}
	if s.cfg.Lazy {
		ev.Warnings = append(ev.Warnings, "lazy connect needs cached tools; connected to list them")
	}
	_, err := s.ensure(ctx)
	ev.Duration = time.Since(start)
	if err != nil {
		ev.Err = err
		s.m.emit(ev)
		return err
	}
	s.mu.Lock()
	ev.OK = true
	ev.ToolCount = len(s.tools)
	ev.Warnings = append(ev.Warnings, s.warn...)
	ev.Warnings = append(ev.Warnings, s.filterWarningsLocked()...)
	s.mu.Unlock()
	s.m.emit(ev)
	return nil
}

// ensure returns a live session, connecting first when there is none.
// Concurrent callers share one attempt. After a failed attempt, callers
// are refused until the backoff delay passes.
func (s *server) ensure(ctx context.Context) (*sdk.ClientSession, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("mcp: server %q: %w", s.cfg.Name, ErrClosed)
		}
		if s.cs != nil {
			cs := s.cs
			s.mu.Unlock()
			return cs, nil
		}
		if ch := s.connecting; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if wait := time.Until(s.nextTry); s.failures > 0 && wait > 0 {
			err := s.lastErr
			s.mu.Unlock()
			return nil, fmt.Errorf("mcp: server %q is unavailable (%v); the next attempt is in %s", s.cfg.Name, err, wait.Round(time.Millisecond))
		}
		ch := make(chan struct{})
		s.connecting = ch
		prev := s.state
		s.state = StateConnecting
		lazy := s.lazyFirst
		s.mu.Unlock()

		start := time.Now()
		cs, pid, info, err := s.connect(ctx)
		if err != nil {
			s.failed(ch, prev, err)
			return nil, err
		}
		if !s.connected(ch, cs, pid, info, start, lazy) {
			return nil, fmt.Errorf("mcp: server %q: %w", s.cfg.Name, ErrClosed)
		}
		return cs, nil
	}
}

// failed ends the connection attempt whose channel is ch: the next one
// waits for the backoff delay. A lazy server stays lazy, its cached tools
// still offered.
func (s *server) failed(ch chan struct{}, prev string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connecting = nil
	close(ch)
	s.failures++
	s.nextTry = time.Now().Add(s.m.backoff(s.failures))
	s.lastErr = err
	s.state = StateDown
	if prev == StateLazy {
		s.state = StateLazy
	}
}

// connected ends the connection attempt whose channel is ch by installing
// the new connection and its tools, and reports them; it is false, and
// the connection shut down, when the server was closed meanwhile.
func (s *server) connected(ch chan struct{}, cs *sdk.ClientSession, pid int, info connInfo, start time.Time, lazy bool) bool {
	s.mu.Lock()
	s.connecting = nil
	close(ch)
	if s.closed {
		s.mu.Unlock()
		s.shutdown(cs, pid)
		return false
	}
	reconnect := s.everUp
	s.cs, s.pid, s.client = cs, pid, info.client
	s.failures, s.lastErr = 0, nil
	s.everUp, s.lazyFirst = true, false
	s.state = StateConnected
	s.protocol = info.protocol
	s.instr = info.instructions
	old := s.names()
	s.setToolsLocked(info.tools)
	names := s.names()
	s.m.saveToolCache(s.cfg.Name, info.tools)
	s.m.wg.Add(1)
	s.mu.Unlock()

	go s.watch(cs)
	if now := s.m.Roots(); !slices.Equal(now, info.roots) {
		changeRoots(info.client, info.roots, now) // SetRoots ran while connecting
	}
	if !slices.Equal(old, names) {
		s.m.toolsChanged()
		if reconnect || lazy {
			s.m.emit(&ToolsChanged{Server: s.cfg.Name, Tools: names})
		}
	}
	s.m.emit(&Connected{Server: s.cfg.Name, Transport: s.cfg.transport(), Protocol: info.protocol, Tools: names, Lazy: lazy, Reconnect: reconnect, Duration: time.Since(start)})
	return true
}

func (s *server) up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs != nil || s.state == StateLazy
}

func (s *server) hasTools() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tools) > 0
}
