package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
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

		s.mu.Lock()
		s.connecting = nil
		close(ch)
		if err == nil && s.closed {
			s.mu.Unlock()
			s.shutdown(cs, pid)
			return nil, fmt.Errorf("mcp: server %q: %w", s.cfg.Name, ErrClosed)
		}
		if err != nil {
			s.failures++
			s.nextTry = time.Now().Add(s.m.backoff(s.failures))
			s.lastErr = err
			s.state = StateDown
			if prev == StateLazy {
				s.state = StateLazy
			}
			s.mu.Unlock()
			return nil, err
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
		return cs, nil
	}
}

// connInfo is what a new connection learned.
type connInfo struct {
	protocol, instructions string
	tools                  []ToolInfo
	client                 *sdk.Client
	roots                  []Root // the roots the client started with
}

// connect opens a connection and lists the tools, within the connect
// timeout. The connection itself lives on a context of its own, ended by
// shutdown or Close: transports such as SSE keep a stream open on the
// context they connect with.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, int, connInfo, error) {
	var info connInfo
	live, stop := context.WithCancel(context.WithoutCancel(ctx))
	unbind := context.AfterFunc(s.m.ctx, stop)
	stopAll := func() { unbind(); stop() }
	hctx, hcancel := context.WithTimeout(live, s.connectTimeout())
	defer hcancel()
	endHandshake := context.AfterFunc(ctx, hcancel) // the caller gave up
	defer endHandshake()

	t, cmd, err := s.transport(hctx)
	if err != nil {
		stopAll()
		return nil, 0, info, fmt.Errorf("mcp: server %q: %w", s.cfg.Name, err)
	}
	info.roots = s.m.Roots()
	client := s.newClient(info.roots)
	info.client = client
	// The transport connects on live so its streams outlive the handshake;
	// the handshake's bound cancels live when it runs out.
	bound := context.AfterFunc(hctx, func() {
		if hctx.Err() != nil && !errors.Is(context.Cause(hctx), context.Canceled) {
			stop()
		}
	})
	cs, err := client.Connect(live, t, nil)
	bound()
	pid := 0
	if cmd != nil && cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	if err == nil && hctx.Err() != nil {
		_ = cs.Close()
		err = hctx.Err()
	}
	if err != nil {
		stopAll()
		killGroup(pid)
		return nil, 0, info, s.connectError(err)
	}
	s.mu.Lock()
	s.stops[cs] = stopAll
	s.mu.Unlock()
	if res := cs.InitializeResult(); res != nil {
		info.protocol, info.instructions = res.ProtocolVersion, res.Instructions
	}
	info.tools, err = listTools(hctx, cs)
	if err != nil {
		s.shutdown(cs, pid)
		return nil, 0, info, fmt.Errorf("mcp: server %q: listing tools: %w", s.cfg.Name, err)
	}
	return cs, pid, info, nil
}

// newClient makes the SDK client of one connection, offering what the
// host provides: elicitation, sampling, roots.
func (s *server) newClient(roots []Root) *sdk.Client {
	caps := &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{ListChanged: true}}
	opts := &sdk.ClientOptions{
		Logger: s.m.log,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.m.refreshLater(s)
		},
		Capabilities: caps,
	}
	if s.m.opts.Elicit != nil {
		caps.Elicitation = &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}
		opts.ElicitationHandler = s.elicit
	}
	if s.m.opts.Sampling != nil {
		caps.Sampling = &sdk.SamplingCapabilities{}
		opts.CreateMessageHandler = s.sample
	}
	c := sdk.NewClient(&sdk.Implementation{Name: s.m.clientName, Version: s.m.clientVersion}, opts)
	changeRoots(c, nil, roots)
	return c
}

// connectError says why a connection failed, with the last line a stdio
// server wrote to stderr, which usually names the problem.
func (s *server) connectError(err error) error {
	if s.stderr != nil {
		if line := s.stderr.lastLine(); line != "" {
			return fmt.Errorf("mcp: server %q: connect: %w; its stderr says: %s", s.cfg.Name, err, line)
		}
	}
	return fmt.Errorf("mcp: server %q: connect: %w", s.cfg.Name, err)
}

func listTools(ctx context.Context, cs *sdk.ClientSession) ([]ToolInfo, error) {
	var out []ToolInfo
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		info, err := infoOf(t)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// transport builds a new transport for one connection attempt, resolving
// the config's templates now.
func (s *server) transport(ctx context.Context) (sdk.Transport, *exec.Cmd, error) {
	c := &s.cfg
	lookup := s.m.lookup
	switch c.transport() {
	case TransportCustom:
		t, err := c.NewTransport(ctx)
		return t, nil, err
	case TransportStdio:
		command, err := Expand(c.Command, lookup)
		if err != nil {
			return nil, nil, fmt.Errorf("command: %w", err)
		}
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			if args[i], err = Expand(a, lookup); err != nil {
				return nil, nil, fmt.Errorf("argument %d: %w", i+1, err)
			}
		}
		env, err := s.env()
		if err != nil {
			return nil, nil, err
		}
		// The command's life is bounded by Close, not by ctx: ctx only
		// bounds connecting.
		cmd := exec.Command(command, args...)
		cmd.Dir, cmd.Env = c.Dir, env
		s.stderr = &tailBuffer{name: c.Name, log: s.m.log}
		cmd.Stderr = s.stderr
		isolate(cmd)
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.grace}, cmd, nil
	default:
		u, err := Expand(c.URL, lookup)
		if err != nil {
			return nil, nil, fmt.Errorf("URL: %w", err)
		}
		headers := http.Header{}
		for k, v := range c.Headers {
			if v, err = Expand(v, lookup); err != nil {
				return nil, nil, fmt.Errorf("header %s: %w", k, err)
			}
			headers.Set(k, v)
		}
		if c.Auth != nil {
			h, err := s.m.authHeaders(ctx, s, "")
			if err != nil {
				return nil, nil, err
			}
			for k, vs := range h {
				headers[k] = vs
			}
		}
		base := http.DefaultTransport
		if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
			base = c.HTTPClient.Transport
		}
		hc := &http.Client{Transport: &headerTransport{base: base, headers: headers, server: c.Name}}
		if c.HTTPClient != nil {
			hc.Timeout, hc.Jar, hc.CheckRedirect = c.HTTPClient.Timeout, c.HTTPClient.Jar, c.HTTPClient.CheckRedirect
		}
		if c.SSE {
			return &sdk.SSEClientTransport{Endpoint: u, HTTPClient: hc}, nil, nil
		}
		t := &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: hc}
		if c.OAuth != nil {
			h, err := s.m.oauthHandler(s)
			if err != nil {
				return nil, nil, err
			}
			t.OAuthHandler = h
		}
		return t, nil, nil
	}
}

// env builds a stdio server's environment.
func (s *server) env() ([]string, error) {
	var env []string
	if s.cfg.InheritEnv {
		env = os.Environ()
	} else {
		for _, k := range safeEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := Expand(s.cfg.Env[k], s.m.lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

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
