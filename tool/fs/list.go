package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

type lsArgs struct {
	Path string `json:"path"`
}

func (t *tools) lsTool() tool.Tool {
	return &tool.Func{ToolSpec: tool.Spec{
		Name:        "ls",
		Description: "List a directory in the workspace: each entry with its type and size. Directories end in \"/\".",
		Schema: schema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"directory path, relative to the workspace root or absolute inside it (default: the root)"}},` +
			`"additionalProperties":false}`),
		Annotations: &tool.Annotations{ReadOnly: true, Idempotent: true},
	}, Fn: t.ls, SubjectFn: tool.PathSubject}
}

func (t *tools) ls(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a lsArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	if a.Path == "" {
		a.Path = "."
	}
	fi, err := t.p.Stat(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	if !fi.IsDir() {
		return tool.Errorf("%s is a file (%s), not a directory; read it with read", a.Path, humanSize(fi.Size())), nil
	}
	ents, err := t.p.ReadDir(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	if len(ents) == 0 {
		return tool.Text(fmt.Sprintf("%s is an empty directory.", a.Path)), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)\n", a.Path, entries(len(ents)))
	for i, e := range ents {
		if i == t.o.MaxEntries {
			fmt.Fprintf(&b, "… and %s more; use glob to find specific files\n", entries(len(ents)-i))
			break
		}
		b.WriteString(e.Name())
		switch typ := e.Type(); {
		case typ.IsDir():
			b.WriteString("/")
		case typ&iofs.ModeSymlink != 0:
			b.WriteString("  (symlink)")
		case typ.IsRegular():
			if info, err := e.Info(); err == nil {
				b.WriteString("  " + humanSize(info.Size()))
			}
		case typ&iofs.ModeNamedPipe != 0:
			b.WriteString("  (fifo)")
		case typ&iofs.ModeDevice != 0:
			b.WriteString("  (device)")
		case typ&iofs.ModeSocket != 0:
			b.WriteString("  (socket)")
		}
		b.WriteByte('\n')
	}
	return tool.Text(strings.TrimRight(b.String(), "\n")), nil
}

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Sort    string `json:"sort"`
}

func (t *tools) globTool() tool.Tool {
	return &tool.Func{ToolSpec: tool.Spec{
		Name: "glob",
		Description: "Find files by name pattern. \"*\" matches within one path component, \"**\" any number of directories " +
			"(\"**/*.go\" is every Go file). Files ignored by .gitignore and the .git directory are skipped. " +
			"Results are paths relative to the workspace root, newest first (or by name).",
		Schema: schema(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"glob pattern relative to path, such as **/*.ts or src/*/main.go"},` +
			`"path":{"type":"string","description":"directory to search (default: the workspace root)"},` +
			`"sort":{"type":"string","enum":["mtime","name"],"description":"order: mtime (newest first, the default) or name"}},` +
			`"required":["pattern"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{ReadOnly: true, Idempotent: true},
	}, Fn: t.glob, SubjectFn: tool.PathSubject}
}

// checkPattern refuses patterns that climb out of the search directory.
func checkPattern(pattern string) error {
	if strings.HasPrefix(pattern, "/") {
		return errors.New("is absolute; give it relative to path")
	}
	for _, c := range strings.Split(pattern, "/") {
		if c == ".." {
			return errors.New("contains \"..\"; patterns cannot leave the search directory, set path instead")
		}
	}
	return nil
}

type found struct {
	rel   string
	mtime time.Time
}

func (t *tools) glob(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a globArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	if a.Pattern == "" {
		return tool.Errorf("pattern is required"), nil
	}
	if err := checkPattern(a.Pattern); err != nil {
		return tool.Errorf("pattern %q %v", a.Pattern, err), nil
	}
	if a.Path == "" {
		a.Path = "."
	}
	if a.Sort != "" && a.Sort != "mtime" && a.Sort != "name" {
		return tool.Errorf("sort must be \"mtime\" or \"name\", not %q", a.Sort), nil
	}
	base, err := t.p.Rel(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	if fi, err := t.p.Stat(a.Path); err != nil {
		return pathError(a.Path, err), nil
	} else if !fi.IsDir() {
		return tool.Errorf("%s is not a directory; give the directory to search in path", a.Path), nil
	}
	pat := strings.Trim(a.Pattern, "/")
	parts := strings.Split(pat, "/")
	// Start below the pattern's literal leading directories.
	start := base
	for len(parts) > 1 && !strings.ContainsAny(parts[0], "*?[\\") {
		start = join(start, parts[0])
		parts = parts[1:]
	}
	rest := strings.Join(parts, "/")
	maxDepth := -1
	if !strings.Contains(rest, "**") {
		maxDepth = len(parts)
	}
	startDepth := depth(start)
	var hits []found
	err = t.walk(ctx, start, true, func(rel string, d iofs.DirEntry) error {
		sub := rel
		if start != "." {
			sub = rel[len(start)+1:]
		}
		dd := depth(rel) - startDepth
		if sandbox.Match(rest, sub) {
			f := found{rel: rel}
			if a.Sort != "name" {
				if info, err := d.Info(); err == nil {
					f.mtime = info.ModTime()
				}
			}
			hits = append(hits, f)
		}
		if d.IsDir() && maxDepth >= 0 && dd >= maxDepth {
			return errSkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return pathError(a.Path, err), nil
	}
	if len(hits) == 0 {
		return tool.Text(fmt.Sprintf("No files match %s in %s.", a.Pattern, where(a.Path))), nil
	}
	if a.Sort != "name" {
		slices.SortStableFunc(hits, func(x, y found) int { return y.mtime.Compare(x.mtime) })
	}
	var b strings.Builder
	for i, h := range hits {
		if i == t.o.MaxEntries {
			fmt.Fprintf(&b, "… and %d more files; narrow the pattern or the path\n", len(hits)-i)
			break
		}
		b.WriteString(h.rel)
		b.WriteByte('\n')
	}
	return tool.Text(strings.TrimRight(b.String(), "\n")), nil
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func depth(rel string) int {
	if rel == "." {
		return 0
	}
	return strings.Count(rel, "/") + 1
}

// where names a search directory in a sentence.
func where(p string) string {
	if p == "." || p == "" {
		return "the workspace"
	}
	return p
}

// entries is "1 entry" or "N entries".
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
