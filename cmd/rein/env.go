package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// environmentSection tells the model where it works: the workspace, the
// platform, the date, and whether the workspace is in a git repository
// and on which branch.
func environmentSection(root string, now time.Time) string {
	var b strings.Builder
	b.WriteString("<environment>\n")
	fmt.Fprintf(&b, "Working directory: %s\n", root)
	fmt.Fprintf(&b, "Platform: %s/%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "Date: %s\n", now.Format("2006-01-02 (Monday)"))
	switch repo, branch := gitState(root); {
	case repo == "":
		b.WriteString("Git repository: no\n")
	case branch == "":
		fmt.Fprintf(&b, "Git repository: yes, at %s\n", repo)
	default:
		fmt.Fprintf(&b, "Git repository: yes, at %s, %s\n", repo, branch)
	}
	b.WriteString("</environment>")
	return b.String()
}

// gitState finds the git repository holding dir, reading files only (no
// git process): its root ("" when there is none) and what HEAD is, as
// "branch NAME" or "detached at SHA".
func gitState(dir string) (root, head string) {
	for d := dir; ; {
		dotgit := filepath.Join(d, ".git")
		if st, err := os.Stat(dotgit); err == nil {
			gitDir := dotgit
			if !st.IsDir() {
				// A worktree or submodule: .git names the real directory.
				b, err := os.ReadFile(dotgit)
				if err != nil {
					return d, ""
				}
				p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
				if !ok {
					return d, ""
				}
				if !filepath.IsAbs(p) {
					p = filepath.Join(d, p)
				}
				gitDir = p
			}
			return d, headOf(gitDir)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
}

func headOf(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	h := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(h, "ref: refs/heads/"); ok {
		return "branch " + ref
	}
	if len(h) >= 12 && !strings.HasPrefix(h, "ref:") {
		return "detached at " + h[:12]
	}
	return ""
}

// reinIgnore is the .gitignore rein keeps in a workspace's .rein/: what
// rein writes there for itself stays out of git status, while the files
// a team shares (agents/, settings.json, plugins/) can be committed.
const reinIgnore = `# Written by rein: its own files in .rein/, kept out of git.
spill/
settings.local.json
.gitignore
`

// ignoreReinState writes .rein/.gitignore in root when .rein/ exists and
// has none.
func ignoreReinState(root string) error {
	dir := filepath.Join(root, ".rein")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil
	}
	p := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	return os.WriteFile(p, []byte(reinIgnore), 0o644)
}
