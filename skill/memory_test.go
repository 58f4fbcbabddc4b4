package skill_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/skill"
)

// TestMemoryOrderAndImports: the user's files come first, then the
// project's from the repository root down to the workspace, each file
// followed by what it imports; imports in code are not imports; a cycle
// is read once; a missing import and one too deep are skipped with why;
// nothing above the repository root is read.
func TestMemoryOrderAndImports(t *testing.T) {
	root := tree(t, map[string]string{
		"AGENTS.md":                      "above the repository: never read",
		"cfg/AGENTS.md":                  "user rules",
		"home/.claude/CLAUDE.md":         "home rules @~/extra.md",
		"home/extra.md":                  "home extra",
		"repo/.git/HEAD":                 "ref: main",
		"repo/AGENTS.md":                 "root agents, see @docs/style.md and `@not/an/import.md`\n```\n@fenced.md\n```\nmail me at a@b.c",
		"repo/docs/style.md":             "style @../AGENTS.md @deeper/one.md @missing.md.",
		"repo/docs/deeper/one.md":        "one @two.md",
		"repo/docs/deeper/two.md":        "two",
		"repo/CLAUDE.md":                 "root claude",
		"repo/svc/api/CLAUDE.md":         "api claude",
		"repo/svc/api/.claude/CLAUDE.md": "api dot-claude",
		"repo/svc/api/.rein/AGENTS.md":   "api rein",
		"repo/svc/api/CLAUDE.local.md":   "api local",
		"repo/svc/AGENTS.md":             "svc agents",
	})
	m, err := skill.LoadMemory(&skill.MemoryRequest{
		Workspace: filepath.Join(root, "repo/svc/api"), UserConfig: filepath.Join(root, "cfg"), Home: filepath.Join(root, "home"), ImportDepth: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.Files() {
		rel, _ := filepath.Rel(root, f.Path)
		got = append(got, f.Scope+" "+filepath.ToSlash(rel))
	}
	want := []string{
		"user cfg/AGENTS.md",
		"user home/.claude/CLAUDE.md",
		"import home/extra.md",
		"project repo/AGENTS.md",
		"import repo/docs/style.md",
		"import repo/docs/deeper/one.md",
		"project repo/CLAUDE.md",
		"project repo/svc/AGENTS.md",
		"project repo/svc/api/CLAUDE.md",
		"project repo/svc/api/.claude/CLAUDE.md",
		"project repo/svc/api/.rein/AGENTS.md",
		"project repo/svc/api/CLAUDE.local.md",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("memory files (-want +got):\n%s", diff)
	}
	var skipped []string
	for _, s := range m.Skipped() {
		rel, _ := filepath.Rel(root, s.Path)
		skipped = append(skipped, filepath.ToSlash(rel)+": "+s.Reason)
	}
	wantSkipped := []string{
		"repo/docs/deeper/two.md: imported by " + filepath.Join(root, "repo/docs/deeper/one.md") + " more than 2 imports deep",
		"repo/docs/missing.md: @missing.md in " + filepath.Join(root, "repo/docs/style.md") + " names no file",
	}
	if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if r := m.Files()[0].Render(); r != `<instructions file="`+filepath.Join(root, "cfg/AGENTS.md")+"\">\nuser rules\n</instructions>" {
		t.Errorf("render = %q", r)
	}
}

func TestMemoryOutsideARepository(t *testing.T) {
	root := tree(t, map[string]string{"AGENTS.md": "parent", "ws/AGENTS.md": "workspace"})
	m, err := skill.LoadMemory(&skill.MemoryRequest{Workspace: filepath.Join(root, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	if fs := m.Files(); len(fs) != 1 || fs[0].Text != "workspace" {
		t.Errorf("files = %+v, want the workspace's alone", fs)
	}
	if _, err := skill.LoadMemory(&skill.MemoryRequest{}); err == nil || !strings.Contains(err.Error(), "workspace") {
		t.Errorf("no workspace: %v", err)
	}
}

// TestMemoryNoticesChanges: a file that changes, appears or goes away
// after loading is told once, with its new contents.
func TestMemoryNoticesChanges(t *testing.T) {
	root := tree(t, map[string]string{".git/HEAD": "", "AGENTS.md": "old rules"})
	m, err := skill.LoadMemory(&skill.MemoryRequest{Workspace: root})
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Notices(); len(n) != 0 {
		t.Fatalf("notices before any change: %q", n)
	}
	agents := filepath.Join(root, "AGENTS.md")
	if err := os.WriteFile(agents, []byte("new rules, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute) // a change within the clock's granularity still counts
	os.Chtimes(agents, later, later)
	if err := os.WriteFile(filepath.Join(root, "CLAUDE.md"), []byte("claude rules"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := m.Notices()
	if len(n) != 2 || !strings.Contains(n[0], "new rules, longer") || !strings.Contains(n[1], "claude rules") {
		t.Fatalf("notices = %q", n)
	}
	if n := m.Notices(); len(n) != 0 {
		t.Errorf("a change was told twice: %q", n)
	}
	os.Remove(filepath.Join(root, "CLAUDE.md"))
	if n := m.Notices(); len(n) != 1 || !strings.Contains(n[0], "removed") {
		t.Errorf("after a removal: %q", n)
	}
}
