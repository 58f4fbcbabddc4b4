package skill

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Root is one folder whose subfolders are skills.
type Root struct {
	Dir string
	// Source names the root in listings: "workspace:.rein",
	// "workspace:.claude", "user", "user:.claude" or "plugin:NAME" for
	// the roots of Roots.
	Source string
}

// RootsRequest says where a host keeps things, for Roots.
type RootsRequest struct {
	// Workspace is the project's directory.
	Workspace string
	// UserConfig is rein's per-user configuration directory
	// (~/.config/rein); its skills/ folder is read.
	UserConfig string
	// Home is the user's home directory; ~/.claude/skills is read. Empty
	// skips it.
	Home string
	// Plugins are plugin folders, in priority order; each one's skills/
	// folder is read.
	Plugins []string
}

// Roots returns the skill roots in priority order, highest first:
//
//  1. <workspace>/.rein/skills
//  2. <workspace>/.claude/skills
//  3. <user config>/skills (~/.config/rein/skills)
//  4. ~/.claude/skills
//  5. <plugin>/skills of each plugin, in the order given
//
// The workspace wins over the user, and the user over plugins: a team's
// skill of a name replaces a personal or a plugin's one, and rein's own
// folder wins over the shared .claude one.
func Roots(req *RootsRequest) []Root {
	var roots []Root
	if req.Workspace != "" {
		roots = append(roots,
			Root{Dir: filepath.Join(req.Workspace, ".rein", "skills"), Source: "workspace:.rein"},
			Root{Dir: filepath.Join(req.Workspace, ".claude", "skills"), Source: "workspace:.claude"})
	}
	if req.UserConfig != "" {
		roots = append(roots, Root{Dir: filepath.Join(req.UserConfig, "skills"), Source: "user"})
	}
	if req.Home != "" {
		roots = append(roots, Root{Dir: filepath.Join(req.Home, ".claude", "skills"), Source: "user:.claude"})
	}
	for _, p := range req.Plugins {
		roots = append(roots, Root{Dir: filepath.Join(p, "skills"), Source: "plugin:" + filepath.Base(p)})
	}
	return roots
}

// Skipped is a folder discovery did not take, with why.
type Skipped struct {
	Path   string // the SKILL.md, or the folder when it has none
	Source string
	Reason string
}

// Library is the skills of a set of roots: at most one per name, the
// first root's, sorted by name.
type Library struct {
	skills  []Skill
	skipped []Skipped
}

// Discover reads every root's subfolders that hold a SKILL.md. A skill
// whose name an earlier root already has is skipped as shadowed; a
// SKILL.md that does not parse is skipped with the reason. A root that
// does not exist holds nothing. Only front matter is read; bodies and the
// files beside them are read when asked for.
func Discover(roots []Root) *Library {
	l := &Library{}
	seen := map[string]string{} // name → SKILL.md that holds it
	for _, r := range roots {
		entries, err := os.ReadDir(r.Dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				l.skipped = append(l.skipped, Skipped{Path: r.Dir, Source: r.Source, Reason: err.Error()})
			}
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(r.Dir, e.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			l.add(dir, r.Source, seen)
		}
	}
	slices.SortFunc(l.skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return l
}

func (l *Library) add(dir, source string, seen map[string]string) {
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		l.skipped = append(l.skipped, Skipped{Path: dir, Source: source, Reason: "no " + FileName + " in the folder"})
		return
	}
	if err != nil {
		l.skipped = append(l.skipped, Skipped{Path: path, Source: source, Reason: err.Error()})
		return
	}
	s, err := Parse(dir, data)
	if err != nil {
		l.skipped = append(l.skipped, Skipped{Path: path, Source: source, Reason: err.Error()})
		return
	}
	if by, ok := seen[s.Name]; ok {
		l.skipped = append(l.skipped, Skipped{Path: path, Source: source, Reason: "shadowed by " + by + ", which has the same name and comes first"})
		return
	}
	s.Source = source
	seen[s.Name] = path
	l.skills = append(l.skills, s)
}

// Skills returns the skills, sorted by name. The caller must not modify
// them.
func (l *Library) Skills() []Skill { return l.skills }

// Skipped returns the folders discovery did not take, in the order met.
func (l *Library) Skipped() []Skipped { return l.skipped }

// Lookup returns the skill of a name.
func (l *Library) Lookup(name string) (*Skill, bool) {
	i, ok := slices.BinarySearchFunc(l.skills, name, func(s Skill, n string) int { return strings.Compare(s.Name, n) })
	if !ok {
		return nil, false
	}
	return &l.skills[i], true
}

// Catalog is the skills catalog for the system prompt: the names and
// descriptions of the skills the model may activate, sorted by name. It
// depends only on the skills found, so it is the same bytes at every
// step and in every run over the same folders, and activating a skill
// never changes it (the prompt cache holds). Empty when there are none.
func (l *Library) Catalog() string {
	var b strings.Builder
	for _, s := range l.skills {
		if !s.ModelInvocable {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("<skills>\nSkills are folders of instructions for particular tasks. When a task matches a skill's description, call the " + ToolName + " tool with its name to load its instructions before you start; load a file it mentions with the same tool and that file's path.\n")
		}
		b.WriteString("- " + s.Name + ": " + s.Description + "\n")
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString("</skills>")
	return b.String()
}
