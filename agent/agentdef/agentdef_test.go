package agentdef_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent/agentdef"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       agentdef.Definition
	}{
		{"comma tools", "---\nname: reviewer\ndescription: Reviews diffs.\ntools: read_file, grep\nmodel: small\n---\nYou review code.\n",
			agentdef.Definition{Name: "reviewer", Description: "Reviews diffs.", Tools: []string{"read_file", "grep"}, Model: "small", Prompt: "You review code.", Path: "r.md"}},
		{"list tools, inherit", "---\ndescription: Finds things.\ntools:\n  - grep\nmodel: inherit\n---\n\nSearch well.\n",
			agentdef.Definition{Name: "r", Description: "Finds things.", Tools: []string{"grep"}, Prompt: "Search well.", Path: "r.md"}},
		{"claude's tool names", "---\nname: c\ndescription: d\ntools: Read, Grep, Bash, Edit, read, WebFetch\nmodel: sonnet\n---\nGo.\n",
			agentdef.Definition{Name: "c", Description: "d", Tools: []string{"read", "grep", "shell", "edit", "WebFetch"}, Model: "sonnet", Prompt: "Go.", Path: "r.md"}},
		{"no tools", "---\nname: x\ndescription: d\n---\n",
			agentdef.Definition{Name: "x", Description: "d", Path: "r.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := agentdef.Parse("r.md", []byte(tc.text))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseErrorsSayWhatToDo(t *testing.T) {
	for text, want := range map[string]string{
		"just a prompt":                             "start the file with a line of ---",
		"---\nname: x\n":                            "end it with a line of ---",
		"---\nname: x\n---\nbody":                   "no description",
		"---\nname: [\n---\n":                       "front matter",
		"---\ndescription: d\ntools: {a: 1}\n---\n": "as a list or as names separated by commas",
	} {
		_, err := agentdef.Parse("a.md", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want an error saying %q", text, err, want)
		}
	}
}

func TestDiscoverWorkspaceWinsOverUser(t *testing.T) {
	ws, user := t.TempDir(), t.TempDir()
	write(t, filepath.Join(user, "a.md"), "---\nname: a\ndescription: user a\n---\n")
	write(t, filepath.Join(user, "u.md"), "---\nname: u\ndescription: only the user's\n---\n")
	write(t, filepath.Join(ws, ".claude", "agents", "a.md"), "---\nname: a\ndescription: claude a\n---\n")
	write(t, filepath.Join(ws, ".claude", "agents", "b.md"), "---\nname: b\ndescription: claude b\n---\n")
	write(t, filepath.Join(ws, ".rein", "agents", "b.md"), "---\nname: b\ndescription: rein b\n---\n")
	write(t, filepath.Join(ws, ".rein", "agents", "notes.txt"), "not a definition")
	defs, err := agentdef.Discover(&agentdef.DiscoverOptions{Workspace: ws, UserDir: user})
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	var got []string
	for _, d := range defs {
		got = append(got, d.Name+": "+d.Description)
	}
	want := []string{"a: claude a", "b: rein b", "u: only the user's"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if defs, err := agentdef.Discover(&agentdef.DiscoverOptions{Workspace: t.TempDir()}); err != nil || len(defs) != 0 {
		t.Errorf("an empty workspace: %v, %v", defs, err)
	}
}
