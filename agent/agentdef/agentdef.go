// Package agentdef reads named subagent definitions in the format teams
// already keep in their repositories: a folder of Markdown files, each
// with YAML front matter naming the agent and a body that is its system
// prompt.
//
//	---
//	name: reviewer
//	description: Reviews a diff for bugs; use after a change.
//	tools: read, grep             # or a YAML list; absent: the parent's tools
//	model: claude-haiku-4-5       # absent or "inherit": the parent's model
//	---
//	You review code. Report bugs with file and line.
//
// Claude Code's tool names in tools (Read, Grep, Bash, …) are read as
// rein's (read, grep, shell, …), through the one table of tool/vocab.
//
// Discover reads the user's folder, then the workspace's .claude/agents/
// and .rein/agents/; a later definition of a name replaces an earlier one,
// so the workspace wins over the user and rein's folder over the shared
// one.
package agentdef

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/reinhq/rein/skill"
	"github.com/reinhq/rein/tool/vocab"
)

// Definition is one named subagent.
type Definition struct {
	Name        string
	Description string
	// Tools names the tools the agent may call, in rein's names; nil
	// means the parent's.
	Tools []string
	// Model names the agent's model; empty means the parent's.
	Model string
	// Prompt is the system prompt: the file's body.
	Prompt string
	// Path is the file the definition was read from.
	Path string
}

type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Tools       yaml.Node `yaml:"tools"`
	Model       string    `yaml:"model"`
}

// Parse reads one definition from data; path names it in errors. A file
// without a name takes its base name without ".md".
func Parse(path string, data []byte) (Definition, error) {
	d := Definition{Path: path}
	head, body, err := skill.SplitFrontMatter(data)
	if err != nil {
		return d, fmt.Errorf("agentdef: %s: %w", path, err)
	}
	var fm frontMatter
	if err := yaml.Unmarshal(head, &fm); err != nil {
		return d, fmt.Errorf("agentdef: %s: front matter: %w", path, err)
	}
	tools, err := toolNames(&fm.Tools)
	if err != nil {
		return d, fmt.Errorf("agentdef: %s: tools: %w", path, err)
	}
	d.Name = strings.TrimSpace(fm.Name)
	if d.Name == "" {
		d.Name = strings.TrimSuffix(filepath.Base(path), ".md")
	}
	d.Description = strings.TrimSpace(fm.Description)
	if d.Description == "" {
		return d, fmt.Errorf("agentdef: %s: no description; say in one line what %s is for, so the model knows when to use it", path, d.Name)
	}
	d.Tools = tools
	if m := strings.TrimSpace(fm.Model); m != "inherit" {
		d.Model = m
	}
	d.Prompt = strings.TrimSpace(string(body))
	return d, nil
}

// toolNames reads tools as a comma-separated string or a list.
func toolNames(n *yaml.Node) ([]string, error) {
	var raw []string
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		raw = strings.Split(n.Value, ",")
	case yaml.SequenceNode:
		if err := n.Decode(&raw); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("write the tools as a list or as names separated by commas")
	}
	out := []string{}
	for _, s := range raw {
		if s = strings.TrimSpace(s); s != "" {
			if rein, ok := vocab.Rein(s); ok {
				s = rein
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// LoadDir reads every *.md file of dir, sorted by name. A missing dir
// holds no definitions.
func LoadDir(dir string) ([]Definition, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agentdef: %w", err)
	}
	var out []Definition
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("agentdef: %w", err)
		}
		d, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// DiscoverOptions says where Discover looks.
type DiscoverOptions struct {
	// Workspace is the project's root; its .claude/agents/ and
	// .rein/agents/ are read. Empty skips them.
	Workspace string
	// UserDir is the user's folder of definitions, such as
	// ~/.config/rein/agents. Empty skips it.
	UserDir string
}

// Discover reads the definitions of the user's folder, then the
// workspace's .claude/agents/ and .rein/agents/, and returns them sorted
// by name; a later folder's definition of a name replaces an earlier one.
func Discover(o *DiscoverOptions) ([]Definition, error) {
	if o == nil {
		o = &DiscoverOptions{}
	}
	var dirs []string
	if o.UserDir != "" {
		dirs = append(dirs, o.UserDir)
	}
	if o.Workspace != "" {
		dirs = append(dirs, filepath.Join(o.Workspace, ".claude", "agents"), filepath.Join(o.Workspace, ".rein", "agents"))
	}
	byName := map[string]Definition{}
	for _, dir := range dirs {
		defs, err := LoadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, d := range defs {
			byName[d.Name] = d
		}
	}
	out := make([]Definition, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return slices.Clip(out), nil
}
