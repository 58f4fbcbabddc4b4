package command

import (
	"regexp"
	"slices"
	"strings"
)

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
// by its own name, its name in Vocabulary, or for an MCP tool its
// mcp__SERVER__TOOL name (servers as for theirName).
func (m *matcher) Match(name string, servers []string) bool {
	if m == nil || m.all {
		return true
	}
	if m.one(name) {
		return true
	}
	if v := vocabOf(name); v != nil && m.one(v.Theirs) {
		return true
	}
	if strings.HasPrefix(name, "mcp_") {
		for _, c := range mcpNames(name, servers) {
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

// Matches reports whether the entry applies to a tool named name; entries
// of events without tools always apply. An entry whose matcher does not
// compile matches every tool, so a guard is never skipped by mistake
// (Flatten and New refuse such entries first).
func (e *Entry) Matches(name string) bool { return e.matches(name, nil) }

// matches is Matches knowing the MCP servers' names.
func (e *Entry) matches(name string, servers []string) bool {
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
	return m.Match(name, servers)
}
