package fs

import (
	"bytes"
	"context"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"strings"

	"github.com/reinhq/rein/tool/sandbox"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	pattern  string
	negate   bool
	dirOnly  bool
	anchored bool // holds a slash: matched against the path below the file's directory
}

// ignoreFile is the rules of one .gitignore, for paths below base.
type ignoreFile struct {
	base  string // directory of the file, relative to the root ("." for the root)
	rules []ignoreRule
}

// parseIgnore reads .gitignore syntax: comments, blank lines, "!"
// negation, a trailing "/" for directories only, a slash anywhere else
// anchoring the pattern to the file's directory, "**" for any depth, and
// backslash escapes.
func parseIgnore(base string, data []byte) *ignoreFile {
	f := &ignoreFile{base: base}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		s := strings.TrimSuffix(string(line), "\r")
		// Trailing spaces are dropped unless escaped.
		for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\\ ") {
			s = s[:len(s)-1]
		}
		if s == "" || s[0] == '#' {
			continue
		}
		var r ignoreRule
		if s[0] == '!' {
			r.negate, s = true, s[1:]
		} else if strings.HasPrefix(s, "\\!") || strings.HasPrefix(s, "\\#") {
			s = s[1:]
		}
		if strings.HasSuffix(s, "/") {
			r.dirOnly, s = true, strings.TrimRight(s, "/")
		}
		if s == "" {
			continue
		}
		r.anchored = strings.Contains(s, "/")
		r.pattern = strings.TrimPrefix(s, "/")
		f.rules = append(f.rules, r)
	}
	return f
}

func (r *ignoreRule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.anchored {
		return sandbox.Match(r.pattern, rel)
	}
	ok, err := path.Match(r.pattern, path.Base(rel))
	return err == nil && ok
}

// ignoreStack holds the .gitignore files from the root down to the
// directory being walked.
type ignoreStack []*ignoreFile

// ignored reports whether rel (relative to the root) is ignored: the
// deepest file with a matching rule decides, and within a file the last
// matching rule.
func (s ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		f := s[i]
		sub := rel
		if f.base != "." {
			if !strings.HasPrefix(rel, f.base+"/") {
				continue
			}
			sub = rel[len(f.base)+1:]
		}
		for j := len(f.rules) - 1; j >= 0; j-- {
			if f.rules[j].match(sub, isDir) {
				return !f.rules[j].negate
			}
		}
	}
	return false
}

// walkFunc is called for each entry found; rel is relative to the root.
// Returning errSkipDir for a directory skips it.
type walkFunc func(rel string, d iofs.DirEntry) error

var errSkipDir = iofs.SkipDir

// walk visits the tree below start (relative to the root) in lexical
// order, skipping .git and .rein (rein's spill files), entries ignored by .gitignore files (when
// gitignore is set) and never descending into symlinked directories.
func (t *tools) walk(ctx context.Context, start string, gitignore bool, fn walkFunc) error {
	var stack ignoreStack
	if gitignore {
		// The .gitignore files of the directories above start apply too.
		dirs := []string{"."}
		if start != "." {
			parts := strings.Split(start, "/")
			for i := 1; i < len(parts); i++ {
				dirs = append(dirs, strings.Join(parts[:i], "/"))
			}
		}
		for _, d := range dirs {
			if f := t.loadIgnore(d); f != nil {
				stack = append(stack, f)
			}
		}
	}
	return t.walkDir(ctx, start, gitignore, stack, fn)
}

func (t *tools) loadIgnore(dir string) *ignoreFile {
	f, err := t.p.Open(path.Join(dir, ".gitignore"), os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil
	}
	return parseIgnore(dir, data)
}

func (t *tools) walkDir(ctx context.Context, dir string, gitignore bool, stack ignoreStack, fn walkFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ents, err := t.p.ReadDir(dir)
	if err != nil {
		return err
	}
	if gitignore {
		for _, e := range ents {
			if e.Name() == ".gitignore" && e.Type().IsRegular() {
				if f := t.loadIgnore(dir); f != nil {
					stack = append(stack[:len(stack):len(stack)], f)
				}
				break
			}
		}
	}
	for _, e := range ents {
		name := e.Name()
		rel := name
		if dir != "." {
			rel = dir + "/" + name
		}
		isDir := e.IsDir()
		if isDir && (name == ".git" || name == ".rein") {
			continue // version control and rein's own spills are noise in searches
		}
		if gitignore && stack.ignored(rel, isDir) {
			continue
		}
		if _, denied := t.p.Denies(rel); denied {
			continue
		}
		err := fn(rel, e)
		if err == errSkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if isDir {
			if err := t.walkDir(ctx, rel, gitignore, stack, fn); err != nil {
				if ctx.Err() != nil {
					return err
				}
				// An unreadable subdirectory is left out, not fatal.
				continue
			}
		}
	}
	return nil
}
