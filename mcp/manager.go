package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/reinhq/rein/tool"
)

// Manager connects a host to its MCP servers and offers their tools.
// It is safe for concurrent use. Close it when done: it stops every
// server process it started.
type Manager struct {
	opts    Options
	servers []*server
	byName  map[string]*server
	log     *slog.Logger
	lookup  func(string) (string, bool)
	grace   time.Duration

	clientName, clientVersion string

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   <-chan struct{}
	wg     sync.WaitGroup

	emitMu sync.Mutex
	set    atomic.Pointer[tool.Set]
	setMu  sync.Mutex // serialises rebuilding the set

	bootMu   sync.Mutex
	booted   bool
	bootErr  error
	booting  chan struct{}
	closeMu  sync.Mutex
	closed   bool
	authMu   sync.Mutex
	auth     map[string]map[string]http.Header // session → server → headers
	namesMu  sync.Mutex
	names    map[string]*server // rein tool name → the server that gave it
	oauthMu  sync.Mutex
	rootsMu  sync.Mutex
	roots    []Root
	oauthFor map[string]auth.OAuthHandler
}

// BootstrapError lists the servers that failed to start. The Manager
// still offers the tools of the others.
type BootstrapError struct {
	Failed map[string]error // by server name
}

// Error names the failed servers and why.
func (e *BootstrapError) Error() string {
	names := make([]string, 0, len(e.Failed))
	for n := range e.Failed {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "mcp: %d server(s) failed to start; the others are available:", len(names))
	for _, n := range names {
		fmt.Fprintf(&b, "\n  %s: %v", n, e.Failed[n])
	}
	return b.String()
}

// Unwrap returns the servers' errors.
func (e *BootstrapError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, err := range e.Failed {
		out = append(out, err)
	}
	return out
}

// New returns a Manager for the servers in opts. It checks the
// configuration but opens no connection (unless Eager is set, which starts
// the bootstrap in the background).
func New(opts *Options) (*Manager, error) {
	m := &Manager{byName: map[string]*server{}, auth: map[string]map[string]http.Header{}, names: map[string]*server{}, oauthFor: map[string]auth.OAuthHandler{}}
	if opts != nil {
		m.opts = *opts
	}
	m.log = m.opts.Logger
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.lookup = m.opts.LookupEnv
	if err := m.SetRoots(m.opts.Roots); err != nil {
		return nil, err
	}
	if sp := m.opts.Sampling; sp != nil && sp.Model == nil {
		return nil, fmt.Errorf("%w: Options.Sampling needs a Model", ErrConfig)
	}
	m.grace = m.opts.ShutdownGrace
	if m.grace <= 0 {
		m.grace = 2 * time.Second
	}
	m.clientName, m.clientVersion = m.opts.ClientName, m.opts.ClientVersion
	if m.clientName == "" {
		m.clientName = "rein"
	}
	if m.clientVersion == "" {
		m.clientVersion = "dev"
	}
	seen := map[string]string{}
	for _, cfg := range m.opts.Servers {
		if err := cfg.validate(); err != nil {
			return nil, err
		}
		key := sanitize(cfg.Name)
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("%w: servers %q and %q have the same name once sanitised (%q); rename one", ErrConfig, prev, cfg.Name, key)
		}
		seen[key] = cfg.Name
		s := newServer(m, cfg)
		m.servers = append(m.servers, s)
		m.byName[cfg.Name] = s
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.done = m.ctx.Done()
	empty, _ := tool.NewSet()
	m.set.Store(empty)
	if m.opts.Eager {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			_ = m.Warmup(m.ctx)
		}()
	}
	return m, nil
}

// Warmup connects every server in parallel (lazy servers with a cached
// tool list only load it) and lists their tools. A server that fails does
// not stop the others: the error is a *BootstrapError naming the failed
// ones, and the Manager offers the tools of the rest. Warmup is
// idempotent and safe to call concurrently; once every server is up, later
// calls return at once, while a call after failures retries the failed
// servers.
func (m *Manager) Warmup(ctx context.Context) error {
	for {
		m.bootMu.Lock()
		if m.isClosed() {
			m.bootMu.Unlock()
			return ErrClosed
		}
		if m.booted && m.bootErr == nil {
			m.bootMu.Unlock()
			return nil
		}
		if ch := m.booting; ch != nil {
			m.bootMu.Unlock()
			select {
			case <-ch:
				m.bootMu.Lock()
				err := m.bootErr
				m.bootMu.Unlock()
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ch := make(chan struct{})
		m.booting = ch
		retry := m.booted
		m.bootMu.Unlock()

		var mu sync.Mutex
		failed := map[string]error{}
		var wg sync.WaitGroup
		for _, s := range m.servers {
			if retry && s.up() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.bootstrap(ctx); err != nil {
					mu.Lock()
					failed[s.cfg.Name] = err
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		var err error
		if len(failed) > 0 {
			err = &BootstrapError{Failed: failed}
		}
		m.toolsChanged()
		m.bootMu.Lock()
		m.booted, m.bootErr, m.booting = true, err, nil
		close(ch)
		m.bootMu.Unlock()
		return err
	}
}

// Tools bootstraps the servers (see Warmup) and returns the tools offered
// to the model: those of every server that is not host-only, in the order
// of Options.Servers. With a *BootstrapError the tools of the servers that
// started are still returned.
func (m *Manager) Tools(ctx context.Context) ([]tool.Tool, error) {
	err := m.Warmup(ctx)
	return m.set.Load().Tools(), err
}

// Set returns the current set of tools offered to the model. It is
// replaced (never modified) when a server's tool list changes, so a host
// that reads it at every step boundary sees tools/list_changed between
// steps.
func (m *Manager) Set() *tool.Set { return m.set.Load() }

// Lookup returns the tool with rein name name from any server, host-only
// ones included.
func (m *Manager) Lookup(name string) (*Tool, bool) {
	for _, s := range m.servers {
		s.mu.Lock()
		for _, t := range s.tools {
			if t.spec.Name == name {
				s.mu.Unlock()
				return t, true
			}
		}
		s.mu.Unlock()
	}
	return nil, false
}

// Call calls the tool named name (the server's own name for it) on server,
// from host code: host-only servers are callable here, and nothing is
// offered to or seen by the model. args may be nil.
func (m *Manager) Call(ctx context.Context, server, name string, args json.RawMessage) (*tool.Result, error) {
	s, err := m.server(server)
	if err != nil {
		return nil, err
	}
	if _, err := s.ensure(ctx); err != nil && !s.hasTools() {
		return nil, err
	}
	s.mu.Lock()
	t := s.byName[name]
	s.mu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("mcp: server %q, tool %q: %w", server, name, ErrUnknownTool)
	}
	if len(args) > 0 {
		fixed, _, err := t.valid.Validate(args)
		if err != nil {
			return nil, err
		}
		args = fixed
	}
	return s.call(ctx, name, t.spec.Name, "", "", args)
}

func (m *Manager) server(name string) (*server, error) {
	s := m.byName[name]
	if s == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	return s, nil
}

// Closers returns the Manager as an io.Closer, for agent.Options.Closers.
func (m *Manager) Closers() []io.Closer { return []io.Closer{m} }

// Close closes every connection and stops every server process the
// Manager started (and what those started), then waits for the Manager's
// goroutines. It is idempotent.
func (m *Manager) Close() error {
	m.closeMu.Lock()
	if m.closed {
		m.closeMu.Unlock()
		return nil
	}
	m.closed = true
	m.closeMu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}

func (m *Manager) isClosed() bool {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	return m.closed
}

// emit delivers an event, one at a time.
func (m *Manager) emit(ev Event) {
	if m.opts.Events == nil {
		return
	}
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	m.opts.Events(ev)
}
