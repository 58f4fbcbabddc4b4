package command

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Aliases maps rein's built-in tool names to the names settings files
// written for Claude Code use. A matcher naming either matches the tool.
var Aliases = map[string]string{
	"shell":      "Bash",
	"read":       "Read",
	"write":      "Write",
	"edit":       "Edit",
	"multi_edit": "MultiEdit",
	"glob":       "Glob",
	"grep":       "Grep",
	"ls":         "LS",
	"todo_write": "TodoWrite",
}

// fileTools take a path that Claude Code's tools call file_path.
var fileTools = map[string]bool{"read": true, "write": true, "edit": true, "multi_edit": true}

// matcher selects tools by name.
type matcher struct {
	all   bool
	names []string       // exact names, for a matcher of names joined by |
	re    *regexp.Regexp // otherwise
}

// compileMatcher reads a matcher: empty or * matches all, names joined by
// | match exactly, anything else is a regular expression (unanchored, as
// in Claude Code, so a guard matches rather too much than too little).
func compileMatcher(s string) (*matcher, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "*" {
		return &matcher{all: true}, nil
	}
	if simpleMatcher.MatchString(s) {
		var names []string
		for n := range strings.SplitSeq(s, "|") {
			if n != "" {
				names = append(names, n)
			}
		}
		return &matcher{names: names}, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	return &matcher{re: re}, nil
}

// Match reports whether the tool named name (rein's name) is selected,
// by its own name, its alias, or for an MCP tool its Claude Code name.
func (m *matcher) Match(name string) bool {
	if m == nil || m.all {
		return true
	}
	if m.one(name) {
		return true
	}
	if alias := Aliases[name]; alias != "" && m.one(alias) {
		return true
	}
	if strings.HasPrefix(name, "mcp_") {
		for _, c := range mcpNames(name) {
			if m.one(c) {
				return true
			}
		}
	}
	return false
}

func (m *matcher) one(name string) bool {
	if m.re != nil {
		return m.re.MatchString(name)
	}
	return slices.Contains(m.names, name)
}

// mcpNames returns the Claude Code spellings (mcp__SERVER__TOOL) of rein's
// MCP tool name mcp_SERVER_TOOL, one per way to split it, the split at the
// first underscore first.
func mcpNames(name string) []string {
	rest, ok := strings.CutPrefix(name, "mcp_")
	if !ok || strings.HasPrefix(rest, "_") {
		return nil
	}
	var out []string
	for i := 0; i < len(rest); i++ {
		if rest[i] == '_' && i > 0 && i < len(rest)-1 {
			out = append(out, "mcp__"+rest[:i]+"__"+rest[i+1:])
		}
	}
	return out
}

// Matches reports whether the entry applies to a tool named name; entries
// of events without tools always apply. An entry whose matcher does not
// compile matches every tool, so a guard is never skipped by mistake
// (Flatten and New refuse such entries first).
func (e *Entry) Matches(name string) bool {
	if !toolEvent(e.Event) {
		return true
	}
	m := e.match
	if m == nil {
		var err error
		if m, err = compileMatcher(e.Matcher); err != nil {
			return true
		}
	}
	return m.Match(name)
}

// outName is the tool name a command is told.
func outName(name string, claude bool) string {
	if claude {
		if a, ok := Aliases[name]; ok {
			return a
		}
		if c := mcpNames(name); len(c) > 0 {
			return c[0]
		}
	}
	return name
}

// outInput adds file_path beside path for file tools, so scripts written
// for either spelling find the path.
func outInput(name string, args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	if !fileTools[name] {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	if p, ok := m["path"]; ok {
		if _, has := m["file_path"]; !has {
			m["file_path"] = p
			if b, err := json.Marshal(m); err == nil {
				return b
			}
		}
	}
	return args
}

// applyUpdate merges a command's updatedInput over args (shallow, so a
// hook may return only the fields it changes) and maps file_path back to
// rein's path for file tools. The result is validated by the agent.
func applyUpdate(name string, args, update json.RawMessage) (json.RawMessage, error) {
	var base map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &base); err != nil {
			base = nil
		}
	}
	if base == nil {
		base = map[string]json.RawMessage{}
	}
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(update, &upd); err != nil {
		return nil, err
	}
	oldPath := base["path"]
	for k, v := range upd {
		base[k] = v
	}
	if fileTools[name] {
		if fp, ok := base["file_path"]; ok {
			// file_path wins when the hook changed it, or when path was not changed.
			if _, setPath := upd["path"]; !setPath || !bytes.Equal(fp, oldPath) {
				base["path"] = fp
			}
			delete(base, "file_path")
		}
	}
	return json.Marshal(base)
}

func sortStrings(s []string) { slices.Sort(s) }
