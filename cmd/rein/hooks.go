package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func init() { extraCommands = append(extraCommands, (*app).hooksCommand) }

// hookConfig is the part of the config file that configures hook
// commands, in the settings-file structure:
//
//	hooks_from = "claude"
//	[[hooks.PreToolUse]]
//	matcher = "Bash"
//	[[hooks.PreToolUse.hooks]]
//	type = "command"
//	command = "~/bin/guard.sh"
//	timeout = 30
type hookConfig struct {
	Hooks map[string][]command.Group `toml:"hooks"`
	// HooksFrom "claude" also reads the workspace's .claude/settings.json
	// and .claude/settings.local.json, like --hooks-from claude.
	HooksFrom string `toml:"hooks_from"`
}

// readHookConfig reads the hooks keys of the config file at path (the
// default config file when empty), ignoring its other keys. A missing file
// is an empty configuration.
func readHookConfig(path string) (*hookConfig, string, error) {
	if path == "" {
		path = filepath.Join(configDir(), "config.toml")
	}
	var c hookConfig
	if _, err := toml.DecodeFile(path, &c); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &c, path, nil
		}
		return nil, path, usageErrorf("config file %s: %v; fix the file or move it aside", path, err)
	}
	return &c, path, nil
}

// hooksFrom resolves the --hooks-from flag against the config: "rein"
// (rein's own config and .rein/settings.json only) or "claude" (also
// .claude/settings*.json).
func hooksFrom(flag, config string) (claude bool, err error) {
	v := flag
	if v == "" {
		v = config
	}
	switch strings.ToLower(v) {
	case "", "rein":
		return false, nil
	case "claude":
		return true, nil
	}
	return false, usageErrorf("--hooks-from %q: use claude (also read .claude/settings.json) or rein", v)
}

// hookLoadOptions says where the hooks of workspace root come from.
func (a *app) hookLoadOptions(root, from string) (*command.LoadOptions, error) {
	cfg, path, err := readHookConfig(a.configPath)
	if err != nil {
		return nil, err
	}
	claude, err := hooksFrom(from, cfg.HooksFrom)
	if err != nil {
		return nil, err
	}
	opts := &command.LoadOptions{Dir: root, Claude: claude, ConfigSource: path}
	if home, err := os.UserHomeDir(); err == nil {
		opts.Home = home // with claude, the user's ~/.claude/settings.json
	}
	if len(cfg.Hooks) > 0 {
		opts.Config = &command.Settings{Hooks: cfg.Hooks}
	}
	return opts, nil
}

// loadHooks builds the hook runner of workspace root: the config file's
// [hooks], .rein/settings.json, and with --hooks-from claude (or
// hooks_from = "claude") the user's ~/.claude/settings.json, then the
// workspace's .claude/settings.json and settings.local.json.
// It returns nil, nil when nothing is configured. Non-blocking hook
// errors and hooks' system messages are printed on a.stderr; each
// session's transcript, in the format hook programs parse, is kept under
// the state directory.
// mode is the --approve mode, told to hooks as permission_mode;
// traceParent, when set, gives them TRACEPARENT.
func (a *app) loadHooks(root, from string, st session.Store, mode string, traceParent func(hook.Scope, llm.CallID) string) (*command.Runner, error) {
	opts, err := a.hookLoadOptions(root, from)
	if err != nil {
		return nil, err
	}
	entries, err := command.Load(opts)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	active := 0
	for i := range entries {
		if entries[i].Active() {
			active++
		}
	}
	if active == 0 {
		return nil, nil
	}
	ro := &command.Options{Dir: root, OnReport: a.reportHook, PermissionMode: permissionMode(mode), MCPServers: a.mcpServerNames(root), TraceParent: traceParent}
	ro.EnvDir = filepath.Join(stateDir(), "env")
	if st != nil {
		ro.Transcripts = command.NewTranscripts(st, filepath.Join(stateDir(), "transcripts"))
	}
	r, err := command.New(entries, ro)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return r, nil
}

// permissionMode is the hook format's name of an --approve mode.
func permissionMode(mode string) string {
	switch mode {
	case "auto":
		return "bypassPermissions"
	case "deny":
		return "dontAsk"
	}
	return "default"
}

// mcpServerNames names the MCP servers of the config file and the
// workspace's project file, so hooks are told their tools' names split
// at the right underscore. Servers given only by --mcp, or whose names
// rein rewrites, fall back to the split at the first underscore.
func (a *app) mcpServerNames(root string) []string {
	servers, err := a.allMCPServers(root, nil)
	if err != nil {
		return nil // the MCP setup reports its own errors
	}
	names := make([]string, 0, len(servers))
	for _, s := range servers {
		names = append(names, s.Name)
	}
	return names
}

// reportMu serialises reports: hooks of parallel tool calls end at once.
var reportMu sync.Mutex

// reportHook shows what a person should see of one hook run: its failures
// and its system message.
func (a *app) reportHook(rep command.Report) {
	if a.stderr == nil || (rep.Decision != "error" && rep.SystemMessage == "") {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	if rep.Decision == "error" {
		fmt.Fprintf(a.stderr, "hook %s %s: %s\n", rep.Event, shortCommand(rep.Command), rep.Reason)
	}
	if rep.SystemMessage != "" {
		fmt.Fprintf(a.stderr, "hook %s: %s\n", rep.Event, rep.SystemMessage)
	}
}

func shortCommand(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// joinNotices polls each source in turn; nil sources are skipped.
func joinNotices(srcs ...func() []string) func() []string {
	var live []func() []string
	for _, s := range srcs {
		if s != nil {
			live = append(live, s)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return func() []string {
		var out []string
		for _, s := range live {
			out = append(out, s()...)
		}
		return out
	}
}

// addHooksFlag registers --hooks-from on a command that runs the agent.
func addHooksFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "hooks-from", "", "also run the hooks of another tool's settings: claude reads ~/.claude/settings.json, then .claude/settings.json and settings.local.json (default from hooks_from in the config)")
}

func (a *app) hooksCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "hooks",
		Short: "Show the hook commands rein runs in a workspace",
		Long: `Hook commands are programs rein runs at its hook points: before and after
tool calls, when a prompt is submitted, when the model wants to stop, and at
session start and end. They read the event as JSON on stdin and answer with
their exit code (2 blocks) or JSON on stdout, in the format of Claude Code's
settings files.

rein reads the [hooks] of its config file, .rein/settings.json and
.rein/settings.local.json of the workspace, and with --hooks-from claude (or
hooks_from = "claude" in the config) the user's ~/.claude/settings.json and
the workspace's .claude/settings.json and .claude/settings.local.json, then the hooks/hooks.json of each plugin
folder under .rein/plugins (and with claude .claude/plugins), whose
commands get $CLAUDE_PLUGIN_ROOT.

Whichever file a hook comes from, it is told tools by the names those
scripts know (Bash, Read, Write, Edit, MultiEdit, LS, Glob, Grep,
TodoWrite, Skill, mcp__SERVER__TOOL), Bash's timeout in milliseconds, a
transcript_path in the JSON-lines format they parse, and permission_mode.
A hook's "ask" is always put to a person, even under --approve auto; with
no terminal it is a refusal. SessionStart hooks get $CLAUDE_ENV_FILE:
what they export there reaches later shell commands.`,
	}
	root.AddCommand(a.hooksListCommand())
	return root
}

func (a *app) hooksListCommand() *cobra.Command {
	var cwd, from string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the configured hook commands and where each comes from",
		Example: `  rein hooks list
  rein hooks list --hooks-from claude --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			opts, err := a.hookLoadOptions(root, from)
			if err != nil {
				return err
			}
			entries, err := command.Load(opts)
			if err != nil {
				return usageErrorf("%v", err)
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				return writeHooksJSON(out, opts, entries)
			}
			return writeHooksTable(out, opts, entries)
		},
	}
	cmd.Flags().StringVarP(&cwd, "cwd", "C", "", "the workspace directory (default the current directory)")
	addHooksFlag(cmd, &from)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON: the files read and every hook")
	return cmd
}

// hookRow is one hook in 'rein hooks list --json'.
type hookRow struct {
	Event   string  `json:"event"`
	Matcher string  `json:"matcher,omitempty"`
	Type    string  `json:"type"`
	Command string  `json:"command,omitempty"`
	Timeout float64 `json:"timeout"` // seconds
	Source  string  `json:"source"`
	Skipped string  `json:"skipped,omitempty"`
}

// hookFileRow is one settings file in 'rein hooks list --json'.
type hookFileRow struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
}

func hookRows(entries []command.Entry) []hookRow {
	rows := make([]hookRow, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		to := e.Timeout
		if to == 0 {
			to = command.DefaultTimeout
		}
		rows = append(rows, hookRow{Event: e.Event, Matcher: e.Matcher, Type: e.Type, Command: e.Command, Timeout: to.Seconds(), Source: e.Source, Skipped: e.Skipped()})
	}
	return rows
}

func hookFiles(opts *command.LoadOptions) []hookFileRow {
	var files []hookFileRow
	if opts.ConfigSource != "" {
		_, err := os.Stat(opts.ConfigSource)
		files = append(files, hookFileRow{Path: opts.ConfigSource, Exists: err == nil})
	}
	for _, f := range command.Files(opts) {
		_, err := os.Stat(f)
		files = append(files, hookFileRow{Path: f, Exists: err == nil})
	}
	return files
}

func writeHooksJSON(w io.Writer, opts *command.LoadOptions, entries []command.Entry) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Files []hookFileRow `json:"files"`
		Hooks []hookRow     `json:"hooks"`
	}{hookFiles(opts), hookRows(entries)})
}

// writeFilesRead lists the settings files a command looked at, and
// whether each was there.
func writeFilesRead(w io.Writer, files []hookFileRow) {
	fmt.Fprintln(w, "Settings read:")
	for _, f := range files {
		state := "not found"
		if f.Exists {
			state = "read"
		}
		fmt.Fprintf(w, "  %s (%s)\n", f.Path, state)
	}
}

func writeHooksTable(w io.Writer, opts *command.LoadOptions, entries []command.Entry) error {
	writeFilesRead(w, hookFiles(opts))
	if len(entries) == 0 {
		fmt.Fprintln(w, "\nNo hooks configured.")
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT\tMATCHER\tCOMMAND\tTIMEOUT\tSOURCE\tNOTE")
	for _, r := range hookRows(entries) {
		m := r.Matcher
		if m == "" {
			m = "*"
		}
		src := r.Source
		if rel, err := filepath.Rel(opts.Dir, src); err == nil && !strings.HasPrefix(rel, "..") {
			src = rel
		}
		note := ""
		if r.Skipped != "" {
			note = "skipped: " + r.Skipped
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%gs\t%s\t%s\n", r.Event, m, shortCommand(r.Command), r.Timeout, src, note)
	}
	return tw.Flush()
}
