package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	switch s.cfg.transport() {
	case TransportCustom:
		t, err := s.cfg.NewTransport(ctx)
		return t, nil, err
	case TransportStdio:
		return s.stdioTransport()
	}
	t, err := s.httpTransport(ctx)
	return t, nil, err
}

// stdioTransport builds the command of a stdio server. The command's life
// is bounded by Close, not by a context: contexts only bound connecting.
func (s *server) stdioTransport() (sdk.Transport, *exec.Cmd, error) {
	c := &s.cfg
	command, err := Expand(c.Command, s.m.lookup)
	if err != nil {
		return nil, nil, fmt.Errorf("command: %w", err)
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		if args[i], err = Expand(a, s.m.lookup); err != nil {
			return nil, nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	env, err := s.env()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(command, args...)
	cmd.Dir, cmd.Env = c.Dir, env
	s.stderr = &tailBuffer{name: c.Name, log: s.m.log}
	cmd.Stderr = s.stderr
	isolate(cmd)
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: s.m.grace}, cmd, nil
}

// httpTransport builds the streamable HTTP or SSE transport of a remote
// server, with its headers (and those of Auth) on every request.
func (s *server) httpTransport(ctx context.Context) (sdk.Transport, error) {
	c := &s.cfg
	u, err := Expand(c.URL, s.m.lookup)
	if err != nil {
		return nil, fmt.Errorf("URL: %w", err)
	}
	headers := http.Header{}
	for k, v := range c.Headers {
		if v, err = Expand(v, s.m.lookup); err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		headers.Set(k, v)
	}
	if c.Auth != nil {
		h, err := s.m.authHeaders(ctx, s, "")
		if err != nil {
			return nil, err
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
		return &sdk.SSEClientTransport{Endpoint: u, HTTPClient: hc}, nil
	}
	t := &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: hc}
	if c.OAuth != nil {
		h, err := s.m.oauthHandler(s)
		if err != nil {
			return nil, err
		}
		t.OAuthHandler = h
	}
	return t, nil
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
