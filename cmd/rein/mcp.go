package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/session"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinhq/rein/mcp"
)

func init() { extraCommands = append(extraCommands, (*app).mcpCommand) }

// mcpConfig is the [mcp] section of the config file:
//
//	[mcp.servers.fs]
//	command = "npx"
//	args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
//	disabled = ["write_file"]
//
//	[mcp.servers.docs]
//	url = "https://example.com/mcp"
//	headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
//	lazy = true
type mcpConfig struct {
	Servers map[string]mcpServerConfig `toml:"servers"`
}

// mcpServerConfig is one [mcp.servers.NAME] table. Values may hold ${VAR}
// templates, resolved when the server is connected.
type mcpServerConfig struct {
	Command     string            `toml:"command"`
	Args        []string          `toml:"args"`
	Dir         string            `toml:"dir"`
	Env         map[string]string `toml:"env"`
	InheritEnv  bool              `toml:"inherit_env"`
	URL         string            `toml:"url"`
	Transport   string            `toml:"transport"` // "http" (default for a URL) or "sse"
	Headers     map[string]string `toml:"headers"`
	Enabled     []string          `toml:"enabled"`
	Disabled    []string          `toml:"disabled"`
	Lazy        bool              `toml:"lazy"`
	HostOnly    bool              `toml:"host_only"`
	Timeout     string            `toml:"timeout"`      // connect timeout, a Go duration
	CallTimeout string            `toml:"call_timeout"` // per call, a Go duration
	OAuth       *struct {
		ClientID     string `toml:"client_id"`
		ClientSecret string `toml:"client_secret"` // better: ${VAR}
		RedirectURL  string `toml:"redirect_url"`
	} `toml:"oauth"`
}

// registerMCPFlag adds the repeatable --mcp flag to a command's flags.
func registerMCPFlag(fl *pflag.FlagSet, dst *[]string) {
	fl.StringArrayVar(dst, "mcp", nil, "an MCP server as 'NAME=COMMAND ARGS…' or 'NAME=https://…' (repeatable)")
}

// loadMCPConfig reads the [mcp] section of the config file at path (the
// default config file when empty); a missing file is no servers.
func loadMCPConfig(path string) (*mcpConfig, error) {
	if path == "" {
		path = filepath.Join(configDir(), "config.toml")
	}
	var file struct {
		MCP mcpConfig `toml:"mcp"`
	}
	_, err := toml.DecodeFile(path, &file)
	if errors.Is(err, fs.ErrNotExist) {
		return &mcpConfig{}, nil
	}
	if err != nil {
		return nil, usageErrorf("config file %s: %v; fix the [mcp] section", path, err)
	}
	return &file.MCP, nil
}

// parseMCPFlag parses one --mcp value: NAME=COMMAND ARGS… split into words
// as a shell would (quotes and backslashes, no expansion), or NAME=URL for
// a streamable-HTTP server.
func parseMCPFlag(v string) (mcp.ServerConfig, error) {
	name, rest, ok := strings.Cut(v, "=")
	name, rest = strings.TrimSpace(name), strings.TrimSpace(rest)
	if !ok || name == "" || rest == "" {
		return mcp.ServerConfig{}, usageErrorf("--mcp %q: want NAME=COMMAND ARGS… or NAME=URL", v)
	}
	if strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://") {
		if strings.ContainsAny(rest, " \t") {
			return mcp.ServerConfig{}, usageErrorf("--mcp %q: a URL server takes no arguments", v)
		}
		return mcp.ServerConfig{Name: name, URL: rest}, nil
	}
	words, err := splitWords(rest)
	if err != nil {
		return mcp.ServerConfig{}, usageErrorf("--mcp %q: %v", v, err)
	}
	return mcp.ServerConfig{Name: name, Command: words[0], Args: words[1:]}, nil
}

// splitWords splits s into words the way a POSIX shell does, with single
// and double quotes and backslash escapes, but no expansion of any kind.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("a trailing backslash escapes nothing")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			closed := false
			for ; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("unclosed double quote")
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}

// serverConfig converts one config-file table.
func (c *mcpServerConfig) serverConfig(name string) (mcp.ServerConfig, error) {
	sc := mcp.ServerConfig{Name: name, Command: c.Command, Args: c.Args, Dir: c.Dir, Env: c.Env, InheritEnv: c.InheritEnv,
		URL: c.URL, Headers: c.Headers, Enabled: c.Enabled, Disabled: c.Disabled, Lazy: c.Lazy, HostOnly: c.HostOnly}
	switch c.Transport {
	case "", "http", "streamable-http":
	case "sse":
		sc.SSE = true
	default:
		return sc, usageErrorf("[mcp.servers.%s] transport %q: use http or sse", name, c.Transport)
	}
	for _, d := range []struct {
		s   string
		dst *time.Duration
		key string
	}{{c.Timeout, &sc.ConnectTimeout, "timeout"}, {c.CallTimeout, &sc.CallTimeout, "call_timeout"}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil || v < 0 {
			return sc, usageErrorf("[mcp.servers.%s] %s %q: want a duration such as 30s", name, d.key, d.s)
		}
		*d.dst = v
	}
	if c.OAuth != nil {
		secret, err := mcp.Expand(c.OAuth.ClientSecret, nil)
		if err != nil {
			return sc, usageErrorf("[mcp.servers.%s] oauth client_secret: %v", name, err)
		}
		sc.OAuth = &mcp.OAuthConfig{ClientID: c.OAuth.ClientID, ClientSecret: secret, RedirectURL: c.OAuth.RedirectURL}
	}
	return sc, nil
}

// mcpServers merges the config file's servers (by name) with --mcp values
// (in order); a flag replaces a config server of the same name.
func mcpServers(cfg *mcpConfig, flags []string) ([]mcp.ServerConfig, error) {
	var out []mcp.ServerConfig
	index := map[string]int{}
	if cfg != nil {
		names := make([]string, 0, len(cfg.Servers))
		for n := range cfg.Servers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := cfg.Servers[n]
			sc, err := c.serverConfig(n)
			if err != nil {
				return nil, err
			}
			index[n] = len(out)
			out = append(out, sc)
		}
	}
	for _, f := range flags {
		sc, err := parseMCPFlag(f)
		if err != nil {
			return nil, err
		}
		if i, ok := index[sc.Name]; ok {
			out[i] = sc
			continue
		}
		index[sc.Name] = len(out)
		out = append(out, sc)
	}
	return out, nil
}

// newMCPManager makes the Manager for run, chat and 'rein mcp': tokens
// under the state dir, diagnostics of failing servers to w. The caller
// closes it (agent.Options.Closers does), which stops every server process.
func newMCPManager(servers []mcp.ServerConfig, w io.Writer, events func(mcp.Event)) (*mcp.Manager, error) {
	m, err := mcp.New(&mcp.Options{Servers: servers, StateDir: stateDir(), ToolCache: filepath.Join(stateDir(), "mcp", "tools"),
		ClientName: "rein", ClientVersion: versionString(), Events: events})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return m, nil
}

// mcpTools connects the servers of the config file, flags and extra (an
// editor's, which replace those of the same name) and returns the Manager
// (nil without servers). Servers that fail are reported on w and left out;
// the run goes on with the others.
func (a *app) mcpTools(ctx context.Context, flags []string, extra []mcp.ServerConfig, w io.Writer, events func(mcp.Event)) (*mcp.Manager, error) {
	cfg, err := loadMCPConfig(a.configPath)
	if err != nil {
		return nil, err
	}
	servers, err := mcpServers(cfg, flags)
	if err != nil {
		return nil, err
	}
	for _, sc := range extra {
		servers = slices.DeleteFunc(servers, func(c mcp.ServerConfig) bool { return c.Name == sc.Name })
		servers = append(servers, sc)
	}
	if len(servers) == 0 {
		return nil, nil
	}
	m, err := newMCPManager(servers, w, events)
	if err != nil {
		return nil, err
	}
	if err := m.Warmup(ctx); err != nil {
		var be *mcp.BootstrapError
		if !errors.As(err, &be) {
			m.Close()
			return nil, err
		}
		fmt.Fprintf(w, "rein: %v\n", err)
	}
	return m, nil
}

func (a *app) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers: list them and their tools, log in to OAuth servers",
		Long: `MCP servers come from the [mcp.servers.NAME] tables of the config file and
from --mcp 'NAME=COMMAND ARGS…' (or NAME=URL) on run, chat and these commands.
Their tools are offered to the model as mcp_NAME_TOOL.`,
	}
	var flags []string
	var asJSON, verbose bool
	var timeout time.Duration
	list := &cobra.Command{
		Use:   "list",
		Short: "Connect to every MCP server and show its status and tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadMCPConfig(a.configPath)
			if err != nil {
				return err
			}
			servers, err := mcpServers(cfg, flags)
			if err != nil {
				return err
			}
			if len(servers) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No MCP servers. Add [mcp.servers.NAME] to the config file or pass --mcp 'NAME=COMMAND ARGS…'.")
				return nil
			}
			m, err := newMCPManager(servers, cmd.ErrOrStderr(), nil)
			if err != nil {
				return err
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_ = m.Warmup(ctx) // failures show in the status
			return printMCPStatus(cmd.OutOrStdout(), m.Servers(), asJSON, verbose)
		},
	}
	registerMCPFlag(list.Flags(), &flags)
	list.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	list.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every tool")
	list.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the servers")

	login := &cobra.Command{
		Use:   "login NAME",
		Short: "Log in to an MCP server that uses OAuth; the token is kept under the state dir",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadMCPConfig(a.configPath)
			if err != nil {
				return err
			}
			servers, err := mcpServers(cfg, flags)
			if err != nil {
				return err
			}
			var one []mcp.ServerConfig
			for _, s := range servers {
				if s.Name == args[0] {
					if s.OAuth == nil && s.URL != "" {
						s.OAuth = &mcp.OAuthConfig{}
					}
					one = append(one, s)
				}
			}
			if len(one) == 0 {
				return usageErrorf("no MCP server named %q; see 'rein mcp list'", args[0])
			}
			if one[0].URL == "" {
				return usageErrorf("MCP server %q is not an HTTP server; only those use OAuth", args[0])
			}
			m, err := newMCPManager(one, cmd.ErrOrStderr(), nil)
			if err != nil {
				return err
			}
			defer m.Close()
			w := cmd.OutOrStdout()
			err = m.Login(cmd.Context(), args[0], &mcp.LoginRequest{Open: func(ctx context.Context, u string) error {
				fmt.Fprintf(w, "Open this URL to log in to %s:\n\n  %s\n\n", args[0], u)
				openBrowser(u)
				return nil
			}})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "Logged in to %s.\n", args[0])
			return nil
		},
	}
	registerMCPFlag(login.Flags(), &flags)
	cmd.AddCommand(list, login)
	return cmd
}

// printMCPStatus prints servers as a table or JSON.
func printMCPStatus(w io.Writer, servers []mcp.ServerStatus, asJSON, verbose bool) error {
	if asJSON {
		type row struct {
			Name      string   `json:"name"`
			Transport string   `json:"transport"`
			State     string   `json:"state"`
			HostOnly  bool     `json:"host_only,omitempty"`
			Protocol  string   `json:"protocol,omitempty"`
			Tools     []string `json:"tools"`
			Error     string   `json:"error,omitempty"`
		}
		rows := make([]row, 0, len(servers))
		for _, s := range servers {
			rows = append(rows, row{s.Name, s.Transport, s.State, s.HostOnly, s.Protocol, append([]string{}, s.Tools...), s.Err})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tSTATUS\tTOOLS")
	for _, s := range servers {
		status := s.State
		if s.HostOnly {
			status += " (host only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", s.Name, s.Transport, status, len(s.Tools))
	}
	tw.Flush()
	for _, s := range servers {
		if s.Err != "" {
			fmt.Fprintf(w, "\n%s: %s\n", s.Name, s.Err)
		}
		if verbose && len(s.Tools) > 0 {
			fmt.Fprintf(w, "\n%s tools:\n", s.Name)
			for _, t := range s.Tools {
				fmt.Fprintf(w, "  %s\n", t)
			}
		}
	}
	return nil
}

// openBrowser tries to show u in a browser; failing is fine, the URL is
// printed too.
func openBrowser(u string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return
		}
		cmd = exec.Command("xdg-open", u)
	}
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}

// mcpLog keeps an MCP manager's lifecycle events until the loop records
// them on the session log at its next step boundary (the bootstrap's, in
// the first turn). Calls are left out: they are on the log already as
// tool.call and tool.result with origin mcp.
type mcpLog struct {
	mu      sync.Mutex
	pending []session.Payload
}

func (l *mcpLog) add(ev mcp.Event) {
	switch ev.(type) {
	case *mcp.ToolBefore, *mcp.ToolAfter:
		return
	}
	detail := mcpDetail(ev)
	l.mu.Lock()
	l.pending = append(l.pending, &session.MCPEvent{Kind: ev.Kind(), Server: ev.ServerName(), Detail: detail})
	l.mu.Unlock()
}

func (l *mcpLog) drain() []session.Payload {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pending
	l.pending = nil
	return out
}

// mcpDetail encodes an event's fields, with its error as text (an error
// value has no fields of its own to encode).
func mcpDetail(ev mcp.Event) json.RawMessage {
	var fields map[string]any
	b, err := json.Marshal(ev)
	if err != nil || json.Unmarshal(b, &fields) != nil {
		return nil
	}
	var evErr error
	switch e := ev.(type) {
	case *mcp.BootstrapEnd:
		evErr = e.Err
	case *mcp.Disconnected:
		evErr = e.Err
	case *mcp.ToolError:
		evErr = e.Err
	}
	delete(fields, "Err")
	if evErr != nil {
		fields["Error"] = evErr.Error()
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return out
}
