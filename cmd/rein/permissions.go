package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/tool"
)

// permissionFlags are --allow and --deny: rules in the settings format.
type permissionFlags struct {
	allow, deny []string
}

func (p *permissionFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&p.allow, "allow", nil, "allow calls a rule covers, in the settings format: 'Bash(go test:*)', 'Edit', 'Read(./docs/**)', mcp__SERVER__TOOL (repeatable)")
	fl.StringArrayVar(&p.deny, "deny", nil, "refuse calls a rule covers, in the same format as --allow; a deny wins over every allow (repeatable)")
}

// permissionFiles are the settings files whose "permissions" rein reads,
// in order: the user's, then the workspace's.
func permissionFiles(root string) []string {
	var files []string
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	files = append(files, filepath.Join(configDir(), "settings.json"))
	return append(files,
		filepath.Join(root, ".claude", "settings.json"),
		filepath.Join(root, ".claude", "settings.local.json"),
		filepath.Join(root, ".rein", "settings.json"),
		filepath.Join(root, ".rein", "settings.local.json"))
}

// permissionEntry is one rule as written in a settings file or a flag,
// with what rein makes of it.
type permissionEntry struct {
	Spec    string       `json:"rule"`
	Verdict tool.Verdict `json:"verdict"`
	Source  string       `json:"source"` // the settings file, or the flag
	Rules   []tool.Rule  `json:"-"`
	Skipped string       `json:"skipped,omitempty"` // why rein cannot apply it
}

// permissionRules reads the permission rules of the settings files and
// the flags. A rule rein cannot apply in a file is reported on warn and
// skipped; in a flag it is an error.
func permissionRules(root string, flags *permissionFlags, warn func(string)) ([]tool.Rule, error) {
	entries, err := permissionEntries(root, flags)
	if err != nil {
		return nil, err
	}
	var rules []tool.Rule
	for _, e := range entries {
		if e.Skipped != "" {
			warn(fmt.Sprintf("%s: permissions.%s: %s; the rule is skipped", e.Source, e.Verdict, e.Skipped))
			continue
		}
		rules = append(rules, e.Rules...)
	}
	return rules, nil
}

// permissionEntries reads every rule of the settings files, in file
// order (in each, deny, then ask, then allow), then those of the flags.
func permissionEntries(root string, flags *permissionFlags) ([]permissionEntry, error) {
	var out []permissionEntry
	for _, f := range permissionFiles(root) {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, usageErrorf("settings file %s: %v", f, err)
		}
		var s struct {
			Permissions struct {
				Allow []string `json:"allow"`
				Deny  []string `json:"deny"`
				Ask   []string `json:"ask"`
			} `json:"permissions"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, usageErrorf("settings file %s: %v; it must be a JSON object", f, err)
		}
		for _, l := range []struct {
			v    tool.Verdict
			list []string
		}{{tool.Deny, s.Permissions.Deny}, {tool.Ask, s.Permissions.Ask}, {tool.Allow, s.Permissions.Allow}} {
			for _, spec := range l.list {
				e := permissionEntry{Spec: spec, Verdict: l.v, Source: f}
				rs, err := parsePermission(spec, l.v)
				if err != nil {
					e.Skipped = err.Error()
				}
				e.Rules = rs
				out = append(out, e)
			}
		}
	}
	if flags != nil {
		for _, l := range []struct {
			flag string
			v    tool.Verdict
			list []string
		}{{"--deny", tool.Deny, flags.deny}, {"--allow", tool.Allow, flags.allow}} {
			for _, spec := range l.list {
				rs, err := parsePermission(spec, l.v)
				if err != nil {
					return nil, usageErrorf("%s %q: %v", l.flag, spec, err)
				}
				out = append(out, permissionEntry{Spec: spec, Verdict: l.v, Source: l.flag, Rules: rs})
			}
		}
	}
	return out, nil
}

// fileRuleTools are the tools a Read or Edit rule covers, as in the
// settings format: Read rules cover every tool that reads files, Edit
// rules every tool that changes them.
var fileRuleTools = map[string][]string{
	"read":  {"read", "grep", "glob", "ls"},
	"write": {"write", "edit", "multi_edit"},
	"edit":  {"write", "edit", "multi_edit"},
}

// parsePermission reads one rule: TOOL, TOOL(SPECIFIER) or
// mcp__SERVER__TOOL, with tool names as hook programs know them (the
// table command.Vocabulary) or rein's own.
func parsePermission(spec string, v tool.Verdict) ([]tool.Rule, error) {
	spec = strings.TrimSpace(spec)
	name, arg, hasArg := strings.Cut(spec, "(")
	if hasArg {
		var ok bool
		if arg, ok = strings.CutSuffix(arg, ")"); !ok {
			return nil, errors.New("missing ')'; write TOOL(SPECIFIER), e.g. Bash(go test:*)")
		}
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, errors.New("no tool name; write e.g. Bash, Edit or Bash(go test:*)")
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		server, t, ok := strings.Cut(rest, "__")
		if !ok || server == "" || t == "" || hasArg {
			return nil, errors.New("an MCP rule names one tool: mcp__SERVER__TOOL")
		}
		return []tool.Rule{{Tool: "mcp_" + server + "_" + t, Verdict: v, Name: spec}}, nil
	}
	rein := name
	for _, row := range command.Vocabulary {
		if row.Theirs == name {
			rein = row.Tool
		}
	}
	tools := []string{rein}
	if ft, ok := fileRuleTools[rein]; ok {
		tools = ft
	}
	base := tool.Rule{Verdict: v, Name: spec}
	if hasArg && arg != "" && arg != "*" {
		switch {
		case rein == "shell":
			base.CommandPrefix = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(arg, "*"), ":"))
		case fileRuleTools[rein] != nil:
			p, err := pathPrefix(arg, v)
			if err != nil {
				return nil, err
			}
			base.PathPrefix = p
		default:
			return nil, fmt.Errorf("rein cannot match %s calls by %q; use the tool name alone", name, arg)
		}
	}
	out := make([]tool.Rule, 0, len(tools))
	for _, t := range tools {
		r := base
		r.Tool = t
		out = append(out, r)
	}
	return out, nil
}

// pathPrefix turns a path specifier (./secrets/**, /src/**, //etc/**,
// ~/x) into a prefix; a pattern with wildcards before its end is refused
// for allow (it would allow more than written) and cut at the wildcard
// for deny and ask.
func pathPrefix(spec string, v tool.Verdict) (string, error) {
	p := strings.TrimSuffix(strings.TrimSuffix(spec, "/**"), "/*")
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		if v == tool.Allow {
			return "", fmt.Errorf("rein matches paths by prefix; %q has a wildcard inside: write DIR/** instead", spec)
		}
		p = filepath.Dir(p[:i] + "x")
	}
	switch {
	case strings.HasPrefix(p, "//"):
		p = p[1:]
	case strings.HasPrefix(p, "~/"):
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	case strings.HasPrefix(p, "/"):
		p = "." + p // relative to the workspace, as in the settings format
	}
	if p == "" {
		p = "."
	}
	return filepath.Clean(p), nil
}

// rulesApprover names the rules a headless run was given when its
// default refuses a call none of them covers.
type rulesApprover struct {
	p     *tool.Policy
	allow []string
}

func (r *rulesApprover) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	d, err := r.p.Decide(ctx, req)
	if d.Verdict == tool.Deny && d.Source == "default" && len(r.allow) > 0 {
		d.Reason = "not allowed: only " + strings.Join(r.allow, ", ") + " may run without asking"
	}
	return tool.Approval{Verdict: d.Verdict, Reason: d.Reason}, err
}

// withRules makes p name the allow rules in its default refusals.
func withRules(p *tool.Policy, rules []tool.Rule) tool.Approver {
	var allow []string
	for _, r := range rules {
		if r.Verdict == tool.Allow && r.Name != "" && !slices.Contains(allow, r.Name) {
			allow = append(allow, r.Name)
		}
	}
	if len(allow) == 0 {
		return p
	}
	return &rulesApprover{p: p, allow: allow}
}
