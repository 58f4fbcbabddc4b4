package command

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// Options configures a Runner. The zero value is usable.
type Options struct {
	// Dir is the project directory: the commands' working directory, the
	// "cwd" they are told and $REIN_PROJECT_DIR / $CLAUDE_PROJECT_DIR.
	// Empty means the process's working directory.
	Dir string
	// Shell runs each command as Shell -c COMMAND. Empty means /bin/sh.
	Shell string
	// Env is added to the commands' environment ("NAME=value").
	Env []string
	// PassEnv names variables of rein's environment that look like
	// secrets (API keys, tokens, passwords) and are passed anyway. Others
	// like them are withheld, and their values are cut from hook output.
	PassEnv []string
	// BaseEnv is the environment commands inherit; nil means os.Environ().
	BaseEnv []string
	// DefaultTimeout bounds a command whose entry sets none; zero means
	// DefaultTimeout (60 s).
	DefaultTimeout time.Duration
	// MaxOutput bounds the bytes kept of each of a command's stdout and
	// stderr; zero means DefaultMaxOutput (64 KiB).
	MaxOutput int
	// MCPServers names the MCP servers whose tools (mcp_SERVER_TOOL) the
	// agent has, so a server name holding "_" is told as
	// mcp__SERVER__TOOL split in the right place.
	MCPServers []string
	// PermissionMode is told to commands as permission_mode: "default"
	// when a person approves calls, "bypassPermissions" when everything
	// is allowed, "dontAsk" when what is not allowed is refused.
	PermissionMode string
	// EnvDir holds each session's CLAUDE_ENV_FILE (see EnvFile); empty
	// means SessionStart hooks are not given one.
	EnvDir string
	// Transcripts, when set, writes each session's transcript in the
	// format hook programs parse and tells its path as transcript_path,
	// brought up to date before every hook call. It wins over Transcript.
	Transcripts *Transcripts
	// Transcript returns the path of a session's NDJSON log or export, told
	// to commands as transcript_path. Nil means an empty path.
	Transcript func(session.ID) string
	// OnReport, when set, is called once per command run with what it did,
	// from the goroutine that ran the hook point. A host shows warnings and
	// system messages from here.
	OnReport func(Report)
	// TraceParent, when set, gives the W3C trace context of a hook's
	// scope (and call), passed to its commands as $TRACEPARENT; "" passes
	// none. telemetry.Observer.TraceParent is one.
	TraceParent func(s hook.Scope, call llm.CallID) string
	// Logger receives non-blocking hook errors and system messages; nil
	// discards them.
	Logger *slog.Logger
}

// Runner runs configured hook commands at rein's hook points. Build its
// handlers with Hooks, feed Notices to the agent so context from hooks
// reaches the model, and call Fire for the session events the host owns
// (SessionStart, SessionEnd, PreCompact). A Runner is safe for concurrent
// use; it starts no goroutine that outlives a hook point.
type Runner struct {
	entries []Entry
	opts    Options
	env     []string
	secrets []string

	mu        sync.Mutex
	pending   []string
	stops     map[turnKey]string
	nudged    map[turnKey]bool
	approvals map[llm.CallID]hook.ApprovalDecision
}

type turnKey struct {
	s session.ID
	t session.TurnID
}

// New returns a Runner for entries (from Load or Parse). Entries rein does
// not run (other hook types, unsupported events) are kept for listings
// and skipped.
func New(entries []Entry, opts *Options) (*Runner, error) {
	r := &Runner{stops: map[turnKey]string{}, nudged: map[turnKey]bool{}, approvals: map[llm.CallID]hook.ApprovalDecision{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Shell == "" {
		r.opts.Shell = "/bin/sh"
	}
	if r.opts.DefaultTimeout <= 0 {
		r.opts.DefaultTimeout = DefaultTimeout
	}
	if r.opts.MaxOutput <= 0 {
		r.opts.MaxOutput = DefaultMaxOutput
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.DiscardHandler)
	}
	for i := range entries {
		e := entries[i]
		if !e.Active() {
			continue
		}
		if toolEvent(e.Event) {
			m, err := compileMatcher(e.Matcher)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %s matcher %q: %v", ErrConfig, e.Source, e.Event, e.Matcher, err)
			}
			e.match = m
		}
		r.entries = append(r.entries, e)
	}
	base := r.opts.BaseEnv
	if base == nil {
		base = environ()
	}
	r.env, r.secrets = buildEnv(base, r.opts.PassEnv, r.opts.Env, r.opts.Dir)
	return r, nil
}

// Entries returns the entries the Runner runs, in configuration order.
func (r *Runner) Entries() []Entry { return r.entries }

func (r *Runner) has(event string) bool {
	for i := range r.entries {
		if r.entries[i].Event == event {
			return true
		}
	}
	return false
}

// name is a handler's name in hook.decision events: the event and its
// commands.
func (r *Runner) name(event string) string {
	var cmds []string
	for i := range r.entries {
		if e := &r.entries[i]; e.Event == event && !containsStr(cmds, e.Command) {
			cmds = append(cmds, e.Command)
		}
	}
	s := event + ": " + strings.Join(cmds, "; ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Hooks returns a hook.Set with a handler at each point some entry needs:
// PreToolUse at the pre-tool-use point (with an approval handler for its
// allow/ask answers), PostToolUse and PostToolUseFailure at the
// tool-result point, UserPromptSubmit at prompt submit, Stop at finalize,
// and a step-end handler that ends a turn a hook asked to stop.
func (r *Runner) Hooks() *hook.Set {
	s := new(hook.Set)
	if len(r.entries) == 0 {
		return s
	}
	if r.has(UserPromptSubmit) {
		s.Prompt(r.name(UserPromptSubmit), r.prompt)
	}
	if r.has(PreToolUse) {
		s.PreToolUse(r.name(PreToolUse), r.preToolUse)
		s.Approval(r.name(PreToolUse), r.approval)
		s.Dispatched("command-approvals", r.dispatched)
	}
	if r.has(PostToolUse) || r.has(PostToolUseFailure) {
		s.ToolResult(r.name(PostToolUse), r.postToolUse)
	}
	if r.has(Stop) {
		s.Finalize(r.name(Stop), r.stop)
	}
	s.StepEnd("command-stop", r.stepEnd)
	return s
}

// Notices returns, and forgets, the context hooks added since the last
// call: additionalContext, and the plain output of prompt-submit and
// session-start hooks. Set it as agent.Options.Notices so the next request
// sees it as context.
func (r *Runner) Notices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending
	r.pending = nil
	return p
}

func (r *Runner) addContext(ctx []string) {
	if len(ctx) == 0 {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, ctx...)
	r.mu.Unlock()
}

func (r *Runner) setStop(k turnKey, reason string) {
	r.mu.Lock()
	if _, ok := r.stops[k]; !ok {
		r.stops[k] = reason
	}
	r.mu.Unlock()
}

func (r *Runner) takeStop(k turnKey) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason, ok := r.stops[k]
	delete(r.stops, k)
	return reason, ok
}
