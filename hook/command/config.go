package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Event names, spelled as in the settings files.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	UserPromptSubmit   = "UserPromptSubmit"
	Stop               = "Stop"
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	PreCompact         = "PreCompact"
)

// supported reports whether rein runs hooks of event e.
func supported(e string) bool {
	switch e {
	case PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SessionStart, SessionEnd, PreCompact:
		return true
	}
	return false
}

// toolEvent reports whether e's hooks are chosen by a tool-name matcher.
func toolEvent(e string) bool {
	return e == PreToolUse || e == PostToolUse || e == PostToolUseFailure
}

// DefaultTimeout is how long a hook command may run when its entry sets
// no timeout.
const DefaultTimeout = 60 * time.Second

// maxTimeout is the longest timeout an entry may set.
const maxTimeout = 24 * time.Hour

// ErrConfig marks a settings file rein cannot use; the message names the
// file and the entry.
var ErrConfig = errors.New("command: bad hook configuration")

// Group is one element of an event's list in the settings format: a
// matcher and the hooks it selects.
type Group struct {
	Matcher string `json:"matcher,omitempty" toml:"matcher"`
	Hooks   []Hook `json:"hooks" toml:"hooks"`
}

// Hook is one configured hook. Only Type "command" runs; other types are
// listed and skipped.
type Hook struct {
	Type    string  `json:"type" toml:"type"`
	Command string  `json:"command,omitempty" toml:"command"`
	Timeout float64 `json:"timeout,omitempty" toml:"timeout"` // seconds; 0 means DefaultTimeout
}

// Settings is the shape of a settings file: {"hooks": {EVENT: [Group…]}}.
// Other keys of the file are ignored.
type Settings struct {
	Hooks map[string][]Group `json:"hooks" toml:"hooks"`
	// DisableAllHooks turns the file's hooks off, as in Claude Code's
	// settings.
	DisableAllHooks bool `json:"disableAllHooks,omitempty" toml:"disable_all_hooks"`
}

// Entry is one configured command, flattened from a settings file, with
// where it came from.
type Entry struct {
	Event   string        // PreToolUse, Stop, …
	Matcher string        // tool-name matcher; empty matches every tool
	Type    string        // "command"; others are skipped
	Command string        // run with sh -c in the project directory
	Timeout time.Duration // 0 means DefaultTimeout
	Source  string        // the file (or "config") the entry came from
	// Claude marks entries read from .claude settings or a plugin.
	Claude bool
	// PluginRoot is the directory of the plugin whose hooks/hooks.json
	// the entry came from, given to its command as $CLAUDE_PLUGIN_ROOT;
	// empty for settings files.
	PluginRoot string

	match *matcher
}

// Active reports whether rein runs the entry: a command hook of an event
// rein supports.
func (e *Entry) Active() bool {
	return e.Type == "command" && e.Command != "" && supported(e.Event)
}

// Skipped says why an entry is not run, or "" when it is.
func (e *Entry) Skipped() string {
	switch {
	case !supported(e.Event):
		return "event " + e.Event + " is not supported by rein"
	case e.Type != "command":
		return "hook type " + e.Type + " is not supported by rein"
	case e.Command == "":
		return "empty command"
	}
	return ""
}

// Flatten turns a settings hooks section into entries in configuration
// order (events by name, then groups and hooks as written). source names
// where it came from, for messages and listings.
func Flatten(s *Settings, source string, claude bool) ([]Entry, error) {
	if s == nil || s.DisableAllHooks {
		return nil, nil
	}
	var out []Entry
	for _, ev := range sortedKeys(s.Hooks) {
		for gi, g := range s.Hooks[ev] {
			var m *matcher
			if toolEvent(ev) {
				var err error
				if m, err = compileMatcher(g.Matcher); err != nil {
					return nil, fmt.Errorf("%w: %s: hooks.%s[%d]: %v; fix the matcher (exact name, A|B, a regular expression, or * for all)", ErrConfig, source, ev, gi, err)
				}
			}
			for hi, h := range g.Hooks {
				if !(h.Timeout >= 0 && h.Timeout <= maxTimeout.Seconds()) {
					return nil, fmt.Errorf("%w: %s: hooks.%s[%d].hooks[%d]: timeout %v; use seconds from 0 to %v, or leave it out for %v", ErrConfig, source, ev, gi, hi, h.Timeout, maxTimeout.Seconds(), DefaultTimeout)
				}
				typ := h.Type
				if typ == "" {
					typ = "command"
				}
				out = append(out, Entry{
					Event: ev, Matcher: g.Matcher, Type: typ, Command: h.Command,
					Timeout: time.Duration(h.Timeout * float64(time.Second)),
					Source:  source, Claude: claude, match: m,
				})
			}
		}
	}
	return out, nil
}

// Parse reads a settings file's JSON. Keys other than "hooks" and
// "disableAllHooks" are ignored, so a whole Claude Code settings file
// parses.
func Parse(data []byte, source string, claude bool) ([]Entry, error) {
	var s Settings
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; the file must be a JSON object like {\"hooks\": {\"PreToolUse\": [...]}}", ErrConfig, source, err)
	}
	return Flatten(&s, source, claude)
}

// LoadOptions says where Load looks.
type LoadOptions struct {
	// Dir is the workspace root; its .rein/settings.json (and
	// settings.local.json) are read.
	Dir string
	// Config is the hooks section of rein's own config file, read first.
	Config *Settings
	// ConfigSource names the config file in listings; empty means "config".
	ConfigSource string
	// Claude also reads .claude/settings.json and
	// .claude/settings.local.json of Dir (--hooks-from claude), and,
	// before them, the user's .claude/settings.json under Home.
	Claude bool
	// Home is the user's home directory; empty reads no user settings.
	Home string
}

// Files returns the settings files Load reads for opts, in order, whether
// they exist or not.
func Files(opts *LoadOptions) []string {
	if opts == nil || opts.Dir == "" {
		return nil
	}
	files := []string{
		filepath.Join(opts.Dir, ".rein", "settings.json"),
		filepath.Join(opts.Dir, ".rein", "settings.local.json"),
	}
	if opts.Claude && opts.Home != "" {
		files = append(files, filepath.Join(opts.Home, ".claude", "settings.json"))
	}
	if opts.Claude {
		files = append(files,
			filepath.Join(opts.Dir, ".claude", "settings.json"),
			filepath.Join(opts.Dir, ".claude", "settings.local.json"))
	}
	return append(files, pluginFiles(opts)...)
}

// pluginFiles returns the hooks/hooks.json of each plugin folder under
// .rein/plugins (and, with Claude, .claude/plugins) of opts.Dir, by name.
func pluginFiles(opts *LoadOptions) []string {
	var out []string
	for _, d := range PluginDirs(opts.Dir, opts.Claude) {
		f := filepath.Join(d, "hooks", "hooks.json")
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			out = append(out, f)
		}
	}
	return out
}

// PluginDirs returns the plugin folders of workspace dir: those under
// .rein/plugins, then (with claude) those under .claude/plugins, each
// group by name. A plugin folder may hold hooks/hooks.json and skills/.
func PluginDirs(dir string, claude bool) []string {
	parents := []string{filepath.Join(dir, ".rein", "plugins")}
	if claude {
		parents = append(parents, filepath.Join(dir, ".claude", "plugins"))
	}
	var out []string
	for _, p := range parents {
		entries, _ := os.ReadDir(p)
		for _, e := range entries { // ReadDir sorts by name
			d := filepath.Join(p, e.Name())
			if st, err := os.Stat(d); err == nil && st.IsDir() { // a linked plugin too
				out = append(out, d)
			}
		}
	}
	return out
}

// pluginRoot is the plugin folder of a hooks/hooks.json file, or "" for
// a settings file.
func pluginRoot(file string) string {
	if filepath.Base(file) != "hooks.json" || filepath.Base(filepath.Dir(file)) != "hooks" {
		return ""
	}
	return filepath.Dir(filepath.Dir(file))
}

// Load gathers the hook entries of a workspace: rein's config section,
// then .rein/settings.json and .rein/settings.local.json, then (with
// Claude) .claude/settings.json and .claude/settings.local.json, then the
// hooks/hooks.json of each plugin folder under .rein/plugins (and with
// Claude .claude/plugins), whose commands get $CLAUDE_PLUGIN_ROOT. Missing
// files are skipped; a file that does not parse is an error, so a broken
// guard never silently turns off.
func Load(opts *LoadOptions) ([]Entry, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	src := opts.ConfigSource
	if src == "" {
		src = "config"
	}
	out, err := Flatten(opts.Config, src, false)
	if err != nil {
		return nil, err
	}
	for _, f := range Files(opts) {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrConfig, f, err)
		}
		root := pluginRoot(f)
		claude := root != "" || filepath.Base(filepath.Dir(f)) == ".claude"
		es, err := Parse(data, f, claude)
		if err != nil {
			return nil, err
		}
		for i := range es {
			es[i].PluginRoot = root
		}
		out = append(out, es...)
	}
	return out, nil
}

// sortedKeys returns m's keys in the order events meet a turn, unknown
// ones last by name, so configuration order is stable.
func sortedKeys(m map[string][]Group) []string {
	order := []string{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, Stop, PreCompact, SessionEnd}
	var out []string
	for _, k := range order {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	var rest []string
	for k := range m {
		if !supported(k) {
			rest = append(rest, k)
		}
	}
	sortStrings(rest)
	return append(out, rest...)
}

var simpleMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)
