package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/tool"
)

// Transport names, as reported in events and status.
const (
	TransportStdio  = "stdio" // a subprocess speaking over stdin/stdout
	TransportHTTP   = "http"  // streamable HTTP
	TransportSSE    = "sse"   // the legacy HTTP+SSE transport
	TransportCustom = "custom"
)

// Errors callers branch on.
var (
	// ErrClosed is a Manager or server used after Close.
	ErrClosed = errors.New("mcp: closed")
	// ErrUnknownServer names a server the Manager was not configured with.
	ErrUnknownServer = errors.New("mcp: unknown server; check the name against Options.Servers")
	// ErrUnknownTool names a tool the server does not offer (or a filter removed).
	ErrUnknownTool = errors.New("mcp: the server offers no such tool")
	// ErrConfig is an invalid server configuration.
	ErrConfig = errors.New("mcp: invalid server configuration")
)

// ServerConfig configures one MCP server. Exactly one of Command (a stdio
// server), URL (a remote server) or NewTransport (anything else, such as an
// in-process server) is set.
//
// Env values, Args, URL and Headers values may hold ${VAR} templates. They
// are resolved from the environment each time a connection opens and are
// never written back into the config, so a config can be saved or printed
// without leaking what the variables hold.
type ServerConfig struct {
	// Name identifies the server; its tools are named mcp_<Name>_<tool>.
	Name string

	// Command and Args start a stdio server; Dir is its working directory.
	Command string
	Args    []string
	Dir     string
	// Env adds variables to the server's environment. The server inherits
	// only a safe minimum of rein's own environment (PATH, HOME, USER,
	// LOGNAME, SHELL, TERM, TMPDIR, LANG) unless InheritEnv is set, so API
	// keys held by rein do not reach it by accident.
	Env        map[string]string
	InheritEnv bool

	// URL is a remote server's endpoint. It speaks streamable HTTP unless
	// SSE is set (the legacy transport).
	URL string
	SSE bool
	// Headers are sent with every HTTP request to the server.
	Headers map[string]string
	// Auth, when set, computes extra headers for a session: it is called
	// for every turn of a session (through Manager.Hooks or
	// Manager.Authorize) and for the connection itself (with an empty
	// Session). An error fails the turn; the model never sees it.
	Auth AuthFunc
	// OAuth enables the authorization-code flow for servers that ask for
	// it (HTTP 401 with a WWW-Authenticate challenge).
	OAuth *OAuthConfig
	// HTTPClient, when set, is the base client for HTTP transports.
	HTTPClient *http.Client

	// NewTransport, when set, makes a new transport for every connection
	// attempt, for example an in-memory transport to an in-process server.
	NewTransport func(ctx context.Context) (sdk.Transport, error)

	// Enabled, when not empty, keeps only the listed tools (the server's
	// own names); Disabled removes tools. Filter, when set, keeps the tools
	// it returns true for. They apply in that order.
	Enabled  []string
	Disabled []string
	Filter   func(t ToolInfo) bool

	// Lazy defers connecting until the first tool call when CachedTools
	// holds the tool list; without a cache the list must be fetched, so
	// the server connects at bootstrap anyway (with a warning).
	Lazy        bool
	CachedTools []ToolInfo

	// HostOnly servers are callable from host code (Manager.Call) but their
	// tools are never offered to the model.
	HostOnly bool

	// ConnectTimeout bounds connecting and listing tools; zero means 30s.
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call; zero means no bound beyond the
	// caller's context.
	CallTimeout time.Duration
}

// AuthFunc computes the headers of a session's requests to a server.
type AuthFunc func(ctx context.Context, req *AuthRequest) (http.Header, error)

// AuthRequest is the input of an AuthFunc.
type AuthRequest struct {
	Server string
	// Session is the session whose turn is starting; empty when the
	// headers are for opening the connection outside any session.
	Session string
}

// ToolInfo describes a tool as the server lists it, before renaming. It is
// also the shape of a cached tool list.
type ToolInfo struct {
	Name        string            `json:"name"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Schema      json.RawMessage   `json:"input_schema,omitempty"`
	Annotations *tool.Annotations `json:"annotations,omitempty"`
}

// Backoff spaces reconnection attempts.
type Backoff struct {
	Initial time.Duration // first delay; zero means 250ms
	Max     time.Duration // cap on one delay; zero means 30s
	// Attempts is how many times a dropped connection is retried in the
	// background before waiting for the next call; zero means 8.
	Attempts int
}

// Options configures a Manager. A nil *Options is a Manager with no servers.
type Options struct {
	Servers []ServerConfig
	// Events, when set, receives every lifecycle event (see Event). It is
	// called synchronously, one event at a time; it must not block or call
	// back into the Manager.
	Events func(Event)
	// Eager starts the bootstrap in the background as soon as New returns.
	Eager bool
	// Backoff spaces reconnections of dropped servers.
	Backoff Backoff
	// ShutdownGrace is how long a stdio server may take to exit after its
	// input closes before it is terminated; zero means 2s.
	ShutdownGrace time.Duration
	// ToolCache, when set, is a directory where every server's last tool
	// list is kept (<server>.json); a lazy server without CachedTools
	// starts from it, so it need not connect until its first call.
	ToolCache string
	// StateDir holds OAuth tokens (mcp/oauth/<server>.json, mode 0600).
	StateDir string
	// OpenAuthURL, when set, lets a server that needs an OAuth login (no
	// token yet, a refresh that failed, a wider scope) log in on demand:
	// it shows the authorization URL to the person using the host, and
	// the Manager waits for the browser's redirect as Login does. When
	// nil, such a server fails with ErrLoginRequired until Login.
	OpenAuthURL func(ctx context.Context, server, authURL string) error
	// Elicit, when set, answers servers' requests for input from the
	// person using the host (form and URL modes); without it rein tells
	// servers it cannot elicit.
	Elicit ElicitFunc
	// Sampling, when set, lets servers ask the host's model for
	// completions, each approved first.
	Sampling *SamplingOptions
	// Roots are the directories servers are told they may work in (see
	// DirRoot); Manager.SetRoots changes them.
	Roots []Root
	// ClientName and ClientVersion identify rein to servers; zero means
	// "rein" and "dev".
	ClientName, ClientVersion string
	// LookupEnv resolves ${VAR} templates; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives diagnostics (and servers' stderr at debug level);
	// nil discards them.
	Logger *slog.Logger
	// TracerProvider, when set, traces every tools/call as a client span
	// of the MCP semantic conventions. Whether or not it is set, a call
	// whose context carries a span sends that trace context to the server
	// (params._meta traceparent, and the HTTP traceparent header).
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records each tools/call's duration as
	// mcp.client.operation.duration (s).
	MeterProvider metric.MeterProvider
}

// transport reports the transport a config selects.
func (c *ServerConfig) transport() string {
	switch {
	case c.NewTransport != nil:
		return TransportCustom
	case c.URL != "" && c.SSE:
		return TransportSSE
	case c.URL != "":
		return TransportHTTP
	default:
		return TransportStdio
	}
}

// validate checks a config without resolving its templates.
func (c *ServerConfig) validate() error {
	if c.Name == "" {
		return fmt.Errorf("%w: a server has no name", ErrConfig)
	}
	if sanitize(c.Name) == "" {
		return fmt.Errorf("%w: server name %q has no letters or digits", ErrConfig, c.Name)
	}
	n := 0
	for _, set := range []bool{c.Command != "", c.URL != "", c.NewTransport != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: server %q must set exactly one of a command, a URL or a transport", ErrConfig, c.Name)
	}
	if c.URL == "" && (c.SSE || len(c.Headers) > 0 || c.Auth != nil || c.OAuth != nil) {
		return fmt.Errorf("%w: server %q: headers, auth, OAuth and SSE need a URL", ErrConfig, c.Name)
	}
	if c.OAuth != nil {
		if err := c.OAuth.validate(c.Name); err != nil {
			return err
		}
	}
	if c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "") {
		return fmt.Errorf("%w: server %q: args, env and dir need a command", ErrConfig, c.Name)
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "${") {
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			return fmt.Errorf("%w: server %q: URL %q is not http(s)", ErrConfig, c.Name, c.URL)
		}
	}
	return nil
}

// Expand resolves ${VAR} templates in s with lookup (os.LookupEnv when nil).
// An unset variable is an error naming it, unless the template gives a
// default: ${VAR:-default}. "$$" is a literal "$".
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in template; write $$ for a literal $")
			}
			name, def, hasDef := strings.Cut(s[i+2:i+2+end], ":-")
			v, ok := lookup(name)
			if !ok && hasDef {
				v, ok = def, true
			}
			if !ok {
				return "", fmt.Errorf("${%s} is not set; export it or change the config", name)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// safeEnv are the variables a stdio server inherits by default.
var safeEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "LANG", "LC_ALL", "SYSTEMROOT", "APPDATA", "USERPROFILE"}
