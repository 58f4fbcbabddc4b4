package skill

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultImportDepth is how deep @path imports nest when
// MemoryRequest.ImportDepth is zero.
const DefaultImportDepth = 5

// memoryNames are the memory files of one directory, in the order they
// are given to the model.
var memoryNames = []string{"AGENTS.md", "CLAUDE.md", filepath.Join(".claude", "CLAUDE.md"), filepath.Join(".rein", "AGENTS.md"), "CLAUDE.local.md"}

// MemoryRequest says where to look for memory files.
type MemoryRequest struct {
	// Workspace is the project's directory: it and its parents up to the
	// repository root (the first holding .git) are read; outside a
	// repository, the workspace alone.
	Workspace string
	// UserConfig is rein's per-user configuration directory; its
	// AGENTS.md is read. Empty skips it.
	UserConfig string
	// Home is the user's home directory; ~/.claude/CLAUDE.md is read and
	// imports may start with ~/. Empty skips it.
	Home string
	// ImportDepth caps nested @path imports; zero means
	// DefaultImportDepth, negative turns imports off.
	ImportDepth int
}

// MemoryPreface tells the model how to read the memory files that
// follow it: a host puts it before the first.
const MemoryPreface = "The instructions files below come from the most general (the user's) to the most specific (the workspace's directory); where two disagree, follow the later one."

// MemoryFile is one memory file as loaded.
type MemoryFile struct {
	Path string
	// Scope is "user" or "project", or "import" for a file another one
	// imported (ImportedBy).
	Scope      string
	ImportedBy string
	Text       string
}

// Render is the file as the system prompt holds it, labelled with its
// path.
func (f *MemoryFile) Render() string {
	return fmt.Sprintf("<instructions file=%q>\n%s\n</instructions>", f.Path, strings.TrimSpace(f.Text))
}

// Memory is the memory files of a workspace, loaded in order: the user's
// (rein's config directory's AGENTS.md, then ~/.claude/CLAUDE.md), then
// the project's from the repository root down to the workspace — in each
// directory AGENTS.md, CLAUDE.md, .claude/CLAUDE.md, .rein/AGENTS.md,
// CLAUDE.local.md — each followed by the files it imports. Later files
// are more specific: where two disagree, the later one takes precedence,
// as MemoryPreface tells the model. A Memory is safe for concurrent use.
type Memory struct {
	files   []MemoryFile
	skipped []Skipped

	mu    sync.Mutex
	stamp map[string]stamp // every path looked at, present or not
}

type stamp struct {
	size int64
	mod  time.Time
	ok   bool
}

func stampOf(p string) stamp {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return stamp{}
	}
	return stamp{size: st.Size(), mod: st.ModTime(), ok: true}
}

// LoadMemory finds and reads the memory files req names. A file that
// cannot be read, or an import that names no file, is skipped with the
// reason (Skipped); only a missing Workspace is an error.
func LoadMemory(req *MemoryRequest) (*Memory, error) {
	if req == nil || req.Workspace == "" {
		return nil, errors.New("skill: memory files need a workspace directory")
	}
	ws, err := filepath.Abs(req.Workspace)
	if err != nil {
		return nil, fmt.Errorf("skill: memory files: %w", err)
	}
	depth := req.ImportDepth
	if depth == 0 {
		depth = DefaultImportDepth
	}
	m := &Memory{stamp: map[string]stamp{}}
	l := &memLoader{m: m, home: req.Home, depth: depth, seen: map[string]bool{}}
	if req.UserConfig != "" {
		l.top(filepath.Join(req.UserConfig, "AGENTS.md"), "user")
	}
	if req.Home != "" {
		l.top(filepath.Join(req.Home, ".claude", "CLAUDE.md"), "user")
	}
	for _, dir := range projectDirs(ws) {
		for _, n := range memoryNames {
			l.top(filepath.Join(dir, n), "project")
		}
	}
	return m, nil
}

// projectDirs returns the repository root's path down to dir, outermost
// first; dir alone outside a repository.
func projectDirs(dir string) []string {
	dirs := []string{dir}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			dirs = dirs[:1] // no repository: the workspace alone
			break
		}
		d = parent
		dirs = append(dirs, d)
	}
	slices.Reverse(dirs)
	return dirs
}

type memLoader struct {
	m     *Memory
	home  string
	depth int
	seen  map[string]bool
}

func (l *memLoader) top(path, scope string) {
	l.m.stamp[path] = stampOf(path)
	if !l.m.stamp[path].ok || l.seen[path] {
		return
	}
	l.load(path, scope, "", 0)
}

func (l *memLoader) load(path, scope, by string, depth int) {
	l.seen[path] = true
	data, err := os.ReadFile(path)
	if err != nil {
		l.m.skipped = append(l.m.skipped, Skipped{Path: path, Source: scope, Reason: err.Error()})
		return
	}
	l.m.stamp[path] = stampOf(path)
	text := string(data)
	l.m.files = append(l.m.files, MemoryFile{Path: path, Scope: scope, ImportedBy: by, Text: text})
	if l.depth < 0 {
		return
	}
	for _, imp := range imports(text) {
		p := l.resolve(imp, filepath.Dir(path))
		switch {
		case l.seen[p]:
			continue
		case depth+1 > l.depth:
			l.m.skipped = append(l.m.skipped, Skipped{Path: p, Source: "import", Reason: fmt.Sprintf("imported by %s more than %d imports deep", path, l.depth)})
			continue
		}
		if st := stampOf(p); !st.ok {
			l.m.stamp[p] = st
			l.m.skipped = append(l.m.skipped, Skipped{Path: p, Source: "import", Reason: "@" + imp + " in " + path + " names no file"})
			continue
		}
		l.load(p, "import", path, depth+1)
	}
}

// resolve turns an import into a path: ~/ is the home directory, a
// relative path is relative to the importing file's directory.
func (l *memLoader) resolve(imp, dir string) string {
	switch {
	case strings.HasPrefix(imp, "~/") && l.home != "":
		return filepath.Join(l.home, imp[2:])
	case filepath.IsAbs(imp):
		return filepath.Clean(imp)
	}
	return filepath.Join(dir, imp)
}

// imports returns the @path imports of a memory file: words starting with
// @ outside code blocks and code spans.
func imports(text string) []string {
	var out []string
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for i, span := range strings.Split(line, "`") {
			if i%2 == 1 {
				continue // inside a code span
			}
			for _, w := range strings.Fields(span) {
				p, ok := strings.CutPrefix(w, "@")
				p = strings.TrimRight(p, ".,;:!?)]'\"")
				if ok && p != "" && !strings.Contains(p, "@") {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// Files returns the memory files in order.
func (m *Memory) Files() []MemoryFile { return m.files }

// Skipped returns the files that were named but not loaded, with why.
func (m *Memory) Skipped() []Skipped { return m.skipped }

// Changed reports, and remembers, the paths among those looked at whose
// size or modification time changed, or that appeared or went away,
// since the last call (or the load). It costs one stat per path.
func (m *Memory) Changed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p, old := range m.stamp {
		if now := stampOf(p); now != old {
			m.stamp[p] = now
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Notices re-reads the memory files that changed since the last call and
// returns one notice per change, for agent.Options.Notices: the system
// prompt is left as it was sent (the prompt cache holds) and the model is
// told the new contents as context.
func (m *Memory) Notices() []string {
	var out []string
	for _, p := range m.Changed() {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, fmt.Sprintf("The instructions file %s was removed; its instructions no longer apply.", p))
		case err != nil:
			out = append(out, fmt.Sprintf("The instructions file %s changed but cannot be read: %v", p, err))
		default:
			f := MemoryFile{Path: p, Text: string(data)}
			out = append(out, "The instructions file "+p+" changed; these contents replace what it said before:\n"+f.Render())
		}
	}
	return out
}
