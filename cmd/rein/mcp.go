package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
)

func init() { extraCommands = append(extraCommands, (*app).mcpCommand) }

// newMCPManager makes the Manager for run, chat and 'rein mcp': tokens
// under the state dir, what host offers besides. The caller closes it
// (agent.Options.Closers does), which stops every server process.
func newMCPManager(servers []mcp.ServerConfig, host *mcpHost) (*mcp.Manager, error) {
	opts, err := host.options(servers)
	if err != nil {
		return nil, err
	}
	opts.StateDir, opts.ToolCache = stateDir(), filepath.Join(stateDir(), "mcp", "tools")
	opts.ClientName, opts.ClientVersion = "rein", versionString()
	m, err := mcp.New(opts)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return m, nil
}

// mcpTools connects the servers of every source (see allMCPServers) and
// host.extra (an editor's, which replace those of the same name), and
// returns the Manager (nil without servers). Servers that fail are
// reported on host.out and left out; the run goes on with the others.
func (a *app) mcpTools(ctx context.Context, host *mcpHost) (*mcp.Manager, error) {
	servers, err := a.allMCPServers(host.root, host.flags)
	if err != nil {
		return nil, err
	}
	for _, sc := range host.extra {
		servers = slices.DeleteFunc(servers, func(c mcp.ServerConfig) bool { return c.Name == sc.Name })
		servers = append(servers, sc)
	}
	if len(servers) == 0 {
		return nil, nil
	}
	m, err := newMCPManager(servers, host)
	if err != nil {
		return nil, err
	}
	if err := m.Warmup(ctx); err != nil {
		var be *mcp.BootstrapError
		if !errors.As(err, &be) {
			m.Close()
			return nil, err
		}
		fmt.Fprintf(host.out, "rein: %v\n", err)
	}
	return m, nil
}

func (a *app) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers: list them and their tools, log in to OAuth servers",
		Long: `MCP servers come from, highest precedence first: --mcp 'NAME=COMMAND ARGS…'
(or 'NAME=URL [client_id=ID] [client_secret=${VAR}] …') on run, chat and these
commands; the [mcp.servers.NAME] tables of the config file; and the workspace's
.mcp.json ({"mcpServers": {NAME: {"command": …} or {"type": "http", "url": …}}}),
unless the config sets project_file = false under [mcp]. A server of a higher
source replaces one of the same name. Their tools are offered to the model as
mcp_NAME_TOOL. An HTTP server that asks for OAuth uses the token 'rein mcp
login NAME' saved, whichever source names it.`,
	}
	cmd.AddCommand(a.mcpListCommand(), a.mcpLoginCommand(), a.mcpCallCommand())
	return cmd
}

func (a *app) mcpListCommand() *cobra.Command {
	var flags []string
	var asJSON, verbose bool
	var timeout time.Duration
	var cwd string
	list := &cobra.Command{
		Use:   "list",
		Short: "Connect to every MCP server and show its status and tools; exit 1 when one is down",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			servers, err := a.allMCPServers(root, flags)
			if err != nil {
				return err
			}
			if len(servers) == 0 {
				if asJSON {
					fmt.Fprintln(cmd.OutOrStdout(), "[]")
					return nil
				}
				fmt.Fprintln(cmd.OutOrStdout(), "No MCP servers. Add [mcp.servers.NAME] to the config file, a .mcp.json to the workspace, or pass --mcp 'NAME=COMMAND ARGS…'.")
				return nil
			}
			m, err := newMCPManager(servers, &mcpHost{root: root, out: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_ = m.Warmup(ctx) // failures show in the status
			status := m.Servers()
			if err := printMCPStatus(cmd.OutOrStdout(), status, asJSON, verbose); err != nil {
				return err
			}
			var down []string
			for _, s := range status {
				if s.State != mcp.StateConnected && s.State != mcp.StateLazy {
					down = append(down, s.Name)
				}
			}
			if len(down) > 0 {
				return &codeError{code: exitError, err: fmt.Errorf("%d MCP server(s) not connected: %s; see the errors above", len(down), strings.Join(down, ", "))}
			}
			return nil
		},
	}
	registerMCPFlag(list.Flags(), &flags)
	list.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	list.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every tool")
	list.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the servers")
	list.Flags().StringVarP(&cwd, "cwd", "C", "", "the workspace whose .mcp.json is read (default the current directory)")
	return list
}

func (a *app) mcpLoginCommand() *cobra.Command {
	var flags []string
	var cwd string
	login := &cobra.Command{
		Use:   "login NAME",
		Short: "Log in to an MCP server that uses OAuth; the token is kept under the state dir",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			servers, err := a.allMCPServers(root, flags)
			if err != nil {
				return err
			}
			one, err := pickServer(servers, args[0])
			if err != nil {
				return err
			}
			if one[0].OAuth == nil {
				return usageErrorf("MCP server %q is not a streamable-HTTP server; only those use OAuth", args[0])
			}
			m, err := newMCPManager(one, &mcpHost{root: root, out: cmd.ErrOrStderr()})
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
	login.Flags().StringVarP(&cwd, "cwd", "C", "", "the workspace whose .mcp.json is read (default the current directory)")
	return login
}

// pickServer returns the server named name, alone.
func pickServer(servers []mcp.ServerConfig, name string) ([]mcp.ServerConfig, error) {
	i := slices.IndexFunc(servers, func(s mcp.ServerConfig) bool { return s.Name == name })
	if i < 0 {
		return nil, usageErrorf("no MCP server named %q; see 'rein mcp list'", name)
	}
	return servers[i : i+1], nil
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

// openBrowser tries to show u in a browser: $BROWSER when set (a command,
// with %s standing for the URL or the URL appended), else the system's.
// Failing is fine, the URL is printed too.
func openBrowser(u string) {
	var cmd *exec.Cmd
	if b, _, _ := strings.Cut(os.Getenv("BROWSER"), string(os.PathListSeparator)); b != "" {
		words, err := splitWords(b)
		if err != nil {
			return
		}
		if !slices.ContainsFunc(words, func(w string) bool { return strings.Contains(w, "%s") }) {
			words = append(words, u)
		}
		for i, w := range words {
			words[i] = strings.ReplaceAll(w, "%s", u)
		}
		cmd = exec.Command(words[0], words[1:]...)
	} else {
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
	case *mcp.Elicited:
		evErr = e.Err
	case *mcp.Sampled:
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
