package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// ErrBadRequest is wrapped by a NewAgent error that the client caused (an
// unknown model or tool, say): the server answers 400 with its message
// instead of 500.
var ErrBadRequest = errors.New("serve: bad request")

// ErrNoToken is returned by New without Options.Token.
var ErrNoToken = errors.New("serve: no token; set Options.Token to the secret clients send as 'Authorization: Bearer TOKEN'")

// ErrNoAgent is returned by New without Options.NewAgent.
var ErrNoAgent = errors.New("serve: no agent factory; set Options.NewAgent")

// ErrNoStore is returned by New without Options.Store.
var ErrNoStore = errors.New("serve: no store; set Options.Store to the store NewAgent's agents write to")

// Options configures a Server. Store, Token and NewAgent are required.
type Options struct {
	// Store holds the sessions. The agents NewAgent makes must write to
	// it: the server lists, reads, follows and deletes sessions through
	// it. The caller closes it after the Server.
	Store session.Store
	// NewAgent builds the agent of a session that exists in Store: a new
	// one the server just created or one it reopens. It must use
	// req.Session and should pass req.Approver on (as agent.Options.Approver,
	// or behind a tool.Policy), else approvals never reach the API. An
	// error wrapping ErrBadRequest is the client's mistake. The server
	// closes the handle when the session is deleted or the server closes.
	NewAgent func(ctx context.Context, req *SessionRequest) (*Handle, error)
	// Token is the bearer token every API request must carry.
	Token string
	// Root is the workspace root: a session's cwd must lie inside it.
	// Empty means the process's working directory.
	Root string
	// Markdown renders a session's events as a Markdown transcript for
	// GET …/export?format=markdown; nil answers that format with 501.
	Markdown func(w io.Writer, events []session.Event) error
	// Cost prices usage for GET …/summary; nil uses llm.DefaultCatalog's
	// list prices.
	Cost func(model string, u llm.Usage) float64
	// Heartbeat is how often an idle event stream sends a comment so
	// proxies keep it open; zero means 15s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to an event stream, so a client that
	// stopped reading is dropped; zero means 30s.
	WriteTimeout time.Duration
	// FlushInterval is the least time between two writes to an event
	// stream: the events that arrive in between go out together in the
	// next write, so many clients cost the run little however fast it
	// writes. Zero means 25ms; negative writes each event as it comes.
	FlushInterval time.Duration
	// IdleTimeout is how long a session's agent stays open after its
	// last turn (or since it was built, or since its last event stream
	// left) before the server closes it; the session stays in the store
	// and its agent is built again when a request needs it. Zero means
	// 30 minutes; negative keeps agents open until the session is
	// deleted or the server closes.
	IdleTimeout time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Handle is an agent NewAgent built, with what the server needs around
// it.
type Handle struct {
	Agent *agent.Agent
	// RunHooks are run-level handlers every turn of the session gets
	// (agent.RunRequest.Hooks); nil for none.
	RunHooks *hook.Set
	// Close releases the session's agent and what the host built around
	// it; nil means Agent.Close. It must not close Options.Store.
	Close func() error
}

func (h *Handle) close() error {
	if h.Close != nil {
		return h.Close()
	}
	return h.Agent.Close()
}

// SessionRequest is what NewAgent is asked to build: the session and the
// options its creator chose (recorded in the session's metadata, so a
// reopened session gets them again).
type SessionRequest struct {
	// Session exists in the store.
	Session session.ID
	// Model is PROVIDER/NAME, empty for the host's default.
	Model string
	// Tools names the tools; nil means the host's default, empty none.
	Tools []string
	// Cwd is the session's working directory, absolute and inside
	// Options.Root.
	Cwd string
	// MaxSteps and MaxCost are the turn limits; zero means the host's.
	MaxSteps int
	MaxCost  float64
	// Approver answers calls that need approval through the API; give it
	// to the agent.
	Approver tool.Approver
}

// Server is the HTTP API and web page over a store of sessions. It is an
// http.Handler; mount it at the root of a mux or a listener. Close it to
// end the runs it started.
type Server struct {
	opts  Options
	root  string
	mux   *http.ServeMux
	ctx   context.Context
	stop  context.CancelFunc
	log   *slog.Logger
	runs  sync.WaitGroup
	mu    sync.Mutex
	live  map[session.ID]*live
	close bool
}

// New returns a Server.
func New(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	switch {
	case opts.Store == nil:
		return nil, ErrNoStore
	case opts.NewAgent == nil:
		return nil, ErrNoAgent
	case opts.Token == "":
		return nil, ErrNoToken
	}
	root := opts.Root
	if root == "" {
		root = "."
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	s := &Server{opts: *opts, root: root, log: opts.Logger, live: map[session.ID]*live{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.Heartbeat <= 0 {
		s.opts.Heartbeat = 15 * time.Second
	}
	if s.opts.WriteTimeout <= 0 {
		s.opts.WriteTimeout = 30 * time.Second
	}
	if s.opts.IdleTimeout == 0 {
		s.opts.IdleTimeout = 30 * time.Minute
	}
	if s.opts.FlushInterval == 0 {
		s.opts.FlushInterval = 25 * time.Millisecond
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// ServeHTTP serves the API under /v1 (bearer token required) and the web
// page at / (public assets; the page asks for the token).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1" {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
			writeError(w, http.StatusUnauthorized, "unauthorized",
				"send the server's token as 'Authorization: Bearer TOKEN' (rein serve prints it at start, or reads it from REIN_SERVE_TOKEN)")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.opts.Token)) == 1
}

// Close cancels the turns in flight, waits for them and closes every agent
// the server opened. Event streams end. Close is idempotent; the store is
// the caller's to close.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.close {
		s.mu.Unlock()
		return nil
	}
	s.close = true
	lives := make([]*live, 0, len(s.live))
	for _, l := range s.live {
		lives = append(lives, l)
	}
	s.mu.Unlock()
	s.stop()
	var errs []error
	for _, l := range lives {
		errs = append(errs, l.shut())
	}
	s.runs.Wait()
	return errors.Join(errs...)
}
