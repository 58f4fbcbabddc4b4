package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Options configures a Server.
type Options struct {
	// NewAgent builds the agent of one ACP session, for session/new and
	// session/load. Required. It is called on the connection's goroutines,
	// one call per request; an error is the request's JSON-RPC error, so
	// its message should say what to change.
	NewAgent func(ctx context.Context, req *AgentRequest) (*Handle, error)
	// Name and Version are the agentInfo of initialize; empty Name means
	// "rein".
	Name, Version string
	// Models are the models the editor may switch a session between (the
	// "model" session config option), as the host names them; empty offers
	// no choice.
	Models []string
	// ApprovalTimeout bounds how long a permission request waits for the
	// editor's answer; past it the call is denied. Zero waits until the
	// turn ends.
	ApprovalTimeout time.Duration
	// Logger receives diagnostics (never protocol traffic); nil discards
	// them.
	Logger *slog.Logger
}

// AgentRequest asks the host for the agent of one ACP session.
type AgentRequest struct {
	// Session is the session to open for session/load; empty for
	// session/new, where the host creates one.
	Session session.ID
	// Cwd is the editor's working directory for the session: an absolute
	// path to a directory, the workspace of the agent's tools.
	Cwd string
	// MCPServers are the servers the editor passed, to connect in
	// addition to the host's own. Their values are literal: a "$" in them
	// is escaped for mcp's ${VAR} templates.
	MCPServers []mcp.ServerConfig
	// Approver asks the editor through session/request_permission. Give
	// it to the agent's approval policy for the calls it should ask about.
	Approver tool.Approver
	// Client is what the editor said it can do in initialize; see
	// ClientTools for the tools that use it.
	Client sdk.ClientCapabilities
	// Model is the model the editor chose, one of Options.Models; empty
	// means the host's default.
	Model string

	srv  *Server
	live *live
}

// Handle is the agent a host built for one ACP session.
type Handle struct {
	// Agent runs the session's prompts. Its session id is the ACP
	// session id.
	Agent *agent.Agent
	// RunHooks are run-level hooks every prompt's run gets.
	RunHooks *hook.Set
	// Model is the model the agent runs, as Options.Models names it: the
	// current value of the session's model option.
	Model string
	// Close releases the agent and what the host built with it; nil means
	// Agent.Close.
	Close func() error
}

func (h *Handle) close() error {
	if h.Close != nil {
		return h.Close()
	}
	return h.Agent.Close()
}

// Server is an ACP agent: it answers one editor's requests on one
// connection, with a rein agent per session.
type Server struct {
	opts Options
	log  *slog.Logger

	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	client   sdk.ClientCapabilities
	sessions map[sdk.SessionId]*live
	closed   bool
	served   bool
	work     sync.WaitGroup // requests in flight that build or run agents
}

// live is one open ACP session.
type live struct {
	id       sdk.SessionId
	cwd      string
	mcps     []mcp.ServerConfig
	approver tool.Approver
	tr       *translator
	tasks    editorTasks // background commands in editor terminals

	mu   sync.Mutex
	h    *Handle // replaced when the model changes
	busy bool    // a prompt or a model change is in flight
}

func (l *live) handle() *Handle {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h
}

func (l *live) setHandle(h *Handle) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h = h
}

func (l *live) model() string { return l.handle().Model }

// closeTasks ends the session's background commands in editor terminals,
// waiting a little at most for an editor that stopped answering. It is for
// session/close: an editor that disconnects keeps its terminals, and rein
// writes it nothing more.
func (l *live) closeTasks() {
	ctx, cancel := context.WithTimeout(context.Background(), answerWait)
	defer cancel()
	l.tasks.close(ctx)
}

// claim marks the session busy; false when it already is.
func (l *live) claim() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy {
		return false
	}
	l.busy = true
	return true
}

func (l *live) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy = false
}

// New returns a Server. Serve it on a connection.
func New(opts *Options) (*Server, error) {
	if opts == nil || opts.NewAgent == nil {
		return nil, errors.New("acp: Options.NewAgent is required: it builds the agent of each session")
	}
	s := &Server{opts: *opts, log: opts.Logger, sessions: map[sdk.SessionId]*live{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.Name == "" {
		s.opts.Name = "rein"
	}
	return s, nil
}

// Serve speaks the protocol on r (the editor's requests, one JSON message
// a line) and w (responses and notifications) until r ends or ctx is done,
// then cancels the sessions' runs, waits for them and closes every agent.
// A Server serves once. When ctx ends first, a Read in progress on r is
// left to return on its own (closing r ends it).
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.mu.Lock()
	if s.served {
		s.mu.Unlock()
		return errors.New("acp: Serve called twice; make a Server per connection")
	}
	s.served = true
	s.mu.Unlock()

	out := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	s.conn = sdk.NewAgentSideConnection(s, out, pr)
	s.conn.SetLogger(s.log)
	filtered := make(chan struct{})
	go func() {
		defer close(filtered)
		pw.CloseWithError(filterLines(r, pw, out, s.log))
	}()
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	pr.Close()
	<-s.conn.Done()
	err := s.shutdown(out)
	if ctx.Err() == nil {
		<-filtered
	}
	return err
}

// answerWait bounds how long a closing connection waits for the answers
// to the requests it received (their runs are cancelled first).
const answerWait = 5 * time.Second

// shutdown cancels every run, waits for the requests in flight and their
// answers, and closes the agents.
func (s *Server) shutdown(out *lockedWriter) error {
	s.mu.Lock()
	s.closed = true
	all := make([]*live, 0, len(s.sessions))
	for _, l := range s.sessions {
		all = append(all, l)
	}
	s.sessions = map[sdk.SessionId]*live{}
	s.mu.Unlock()
	for _, l := range all {
		l.handle().Agent.Cancel("close")
	}
	s.work.Wait()
	// An editor that closed its side may still read the answers.
	t := time.NewTimer(answerWait)
	select {
	case <-out.answered():
	case <-t.C:
		s.log.Warn("acp: closing with requests unanswered")
	}
	t.Stop()
	var errs []error
	for _, l := range all {
		errs = append(errs, l.handle().close())
	}
	return errors.Join(errs...)
}

// begin counts a request that builds or runs an agent; false once the
// server is shutting down.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.work.Add(1)
	return true
}

func (s *Server) lookup(id sdk.SessionId) (*live, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.sessions[id]
	if l == nil {
		return nil, invalidParams("session %q is not open on this connection; create one with session/new or open it with session/load", id)
	}
	return l, nil
}

var errClosing = &sdk.RequestError{Code: -32603, Message: "rein is shutting down; start it again"}

// Initialize answers with rein's capabilities and keeps the client's.
func (s *Server) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	s.mu.Lock()
	s.client = p.ClientCapabilities
	s.mu.Unlock()
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:     sdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{}},
		},
		AgentInfo:   &sdk.Implementation{Name: s.opts.Name, Version: s.opts.Version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate accepts: rein reads provider keys from its own environment
// and config, and offers no authentication methods.
func (s *Server) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// NewSession builds an agent in the client's working directory.
func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	l, err := s.open(ctx, "", p.Cwd, p.McpServers)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: l.id, ConfigOptions: s.configOptions(l.model())}, nil
}

// LoadSession opens a stored session and replays its history as updates
// before it answers.
func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if err := session.CheckID(session.ID(p.SessionId)); err != nil {
		return sdk.LoadSessionResponse{}, invalidParams("sessionId %q: %v", p.SessionId, err)
	}
	if l, _ := s.lookup(p.SessionId); l != nil {
		return sdk.LoadSessionResponse{}, invalidParams("session %q is already open on this connection; send prompts to it, or close it first", p.SessionId)
	}
	l, err := s.open(ctx, session.ID(p.SessionId), p.Cwd, p.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if !s.begin() {
		return sdk.LoadSessionResponse{}, errClosing
	}
	defer s.work.Done()
	replay := newTranslator(l.id, l.cwd, true, s.send)
	st := l.handle().Agent.Store()
	for ev, err := range st.Events(ctx, session.ID(l.id), 0) {
		if err != nil {
			return sdk.LoadSessionResponse{}, internalError("read session %s: %v", l.id, err)
		}
		replay.event(ev)
	}
	return sdk.LoadSessionResponse{ConfigOptions: s.configOptions(l.model())}, nil
}

// open builds and registers the agent of a session.
func (s *Server) open(ctx context.Context, id session.ID, cwd string, servers []sdk.McpServer) (*live, error) {
	if !filepath.IsAbs(cwd) {
		return nil, invalidParams("cwd %q must be an absolute path to the project directory", cwd)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return nil, invalidParams("cwd %q is not a directory rein can open", cwd)
	}
	mcps, err := mcpConfigs(servers)
	if err != nil {
		return nil, err
	}
	if !s.begin() {
		return nil, errClosing
	}
	defer s.work.Done()
	l := &live{cwd: filepath.Clean(cwd), mcps: mcps}
	l.tasks.srv, l.tasks.l = s, l
	l.approver = tool.ApproverFunc(func(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
		return s.approve(ctx, l, req)
	})
	h, err := s.build(ctx, l, id, "")
	if err != nil {
		return nil, err
	}
	l.h = h
	l.id = sdk.SessionId(h.Agent.Session())
	l.tr = newTranslator(l.id, l.cwd, false, s.send)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		h.close()
		return nil, errClosing
	}
	s.sessions[l.id] = l
	s.mu.Unlock()
	return l, nil
}

// send writes one session/update; the editor having gone is logged.
func (s *Server) send(id sdk.SessionId, u sdk.SessionUpdate) {
	// Updates go out after a cancel too: the turn's last updates and its
	// end belong to the editor's view of it.
	if err := s.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: id, Update: u}); err != nil {
		s.log.Warn("acp: send session/update", "session", id, "err", err)
	}
}

// Cancel cancels the session's prompt in flight.
func (s *Server) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	l, err := s.lookup(p.SessionId)
	if err != nil {
		s.log.Warn("acp: session/cancel for a session that is not open", "session", p.SessionId)
		return nil
	}
	l.handle().Agent.Cancel("user")
	return nil
}

// CloseSession cancels the session's run and closes its agent.
func (s *Server) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	l, err := s.lookup(p.SessionId)
	if err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	s.mu.Lock()
	delete(s.sessions, p.SessionId)
	s.mu.Unlock()
	l.closeTasks()
	if err := l.handle().close(); err != nil {
		return sdk.CloseSessionResponse{}, internalError("close session %s: %v", p.SessionId, err)
	}
	return sdk.CloseSessionResponse{}, nil
}

// ListSessions is not offered (no sessionCapabilities.list).
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

// ResumeSession is not offered; session/load opens a stored session.
func (s *Server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

// SetSessionMode is refused: rein has no session modes (approval is set
// with rein's own flags and config).
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, invalidParams("rein offers no session modes; set approval with 'rein acp --approve'")
}

func invalidParams(format string, args ...any) *sdk.RequestError {
	return &sdk.RequestError{Code: -32602, Message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) *sdk.RequestError {
	return &sdk.RequestError{Code: -32603, Message: fmt.Sprintf(format, args...)}
}

var _ sdk.Agent = (*Server)(nil)
var _ sdk.AgentLoader = (*Server)(nil)
