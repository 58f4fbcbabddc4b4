package fs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

// fakeEditorFiles is a test Files that writes as an editor would (to
// disk, after noting the write) and can be told to fail.
type fakeEditorFiles struct {
	mu     sync.Mutex
	writes []string // "abs: content"
	fail   error
}

func (f *fakeEditorFiles) WriteFile(ctx context.Context, abs string, data []byte, perm os.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.writes = append(f.writes, abs+": "+string(data))
	return os.WriteFile(abs, data, perm)
}

func byName(tools []tool.Tool) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, tl := range tools {
		m[tl.Spec().Name] = tl
	}
	return m
}

func callTool(t *testing.T, tools map[string]tool.Tool, name, args string) string {
	t.Helper()
	res, err := tools[name].Call(context.Background(), &tool.Call{Name: name, Args: json.RawMessage(args), Session: "s"})
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return render(res)
}

// TestWithFilesWritesThroughFiles: write, edit and multi_edit put new
// content through the Files given, after the same checks as on the OS
// path; read and the original tools are untouched.
func TestWithFilesWritesThroughFiles(t *testing.T) {
	ws := workspace(t)
	orig := NewTools(&sandbox.Policy{Root: ws}, nil)
	files := &fakeEditorFiles{}
	tools := byName(WithFiles(orig, files))
	real, _ := filepath.EvalSymlinks(ws)

	callTool(t, tools, "write", `{"path":"new/hello.txt","content":"hi\n"}`)
	callTool(t, tools, "read", `{"path":"README.md"}`)
	callTool(t, tools, "edit", `{"path":"README.md","old_string":"tiny","new_string":"small"}`)
	callTool(t, tools, "multi_edit", `{"path":"README.md","edits":[{"old_string":"small","new_string":"little"},{"old_string":"TODO: more.","new_string":"Done."}]}`)
	want := []string{
		filepath.Join(real, "new", "hello.txt") + ": hi\n",
		filepath.Join(real, "README.md") + ": # Demo\n\nA small demo. TODO: more.\n",
		filepath.Join(real, "README.md") + ": # Demo\n\nA little demo. Done.\n",
	}
	if diff := cmp.Diff(want, files.writes); diff != "" {
		t.Errorf("writes through Files (-want +got):\n%s", diff)
	}

	// The original tools still write to the OS themselves.
	callTool(t, byName(orig), "write", `{"path":"os.txt","content":"os\n"}`)
	if b, err := os.ReadFile(filepath.Join(ws, "os.txt")); err != nil || string(b) != "os\n" || len(files.writes) != 3 {
		t.Errorf("the original write tool: %q, %v, %d writes through Files; want the OS path", b, err, len(files.writes))
	}
}

// TestWithFilesKeepsConfinement: a path the OS path refuses is refused
// before Files sees it, and a failing Files leaves no empty new file.
func TestWithFilesKeepsConfinement(t *testing.T) {
	ws := workspace(t)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "target.txt"), []byte("outside\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	linked := os.Link(filepath.Join(outside, "target.txt"), filepath.Join(ws, "linked.txt")) == nil
	files := &fakeEditorFiles{}
	tools := byName(WithFiles(NewTools(&sandbox.Policy{Root: ws, Deny: []string{"locked/**"}}, nil), files))
	refused := []string{
		`{"path":"../outside/target.txt","content":"x"}`,
		`{"path":"out/target.txt","content":"x"}`,
		`{"path":"out/new.txt","content":"x"}`,
		`{"path":"locked/a.txt","content":"x"}`,
	}
	if linked {
		refused = append(refused, `{"path":"linked.txt","content":"x"}`)
	}
	for _, args := range refused {
		if got := callTool(t, tools, "write", args); !strings.HasPrefix(got, "[error]") {
			t.Errorf("write %s: %s; want it refused", args, got)
		}
	}
	if len(files.writes) != 0 {
		t.Errorf("Files saw %q; want no write outside the rules", files.writes)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "target.txt")); string(b) != "outside\n" {
		t.Errorf("the file outside changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was created outside the workspace")
	}

	files.fail = errors.New("the buffer is read-only")
	got := callTool(t, tools, "write", `{"path":"fresh.txt","content":"x"}`)
	if !strings.Contains(got, "the buffer is read-only") {
		t.Errorf("write with a failing Files: %s; want its error", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "fresh.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fresh.txt after a failed write: %v; want it absent", err)
	}
}
