package fs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

// Read a file, then edit it: the edit is accepted because the file was
// read in the same session and has not changed since.
func Example() {
	dir, _ := os.MkdirTemp("", "rein-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("Hello, world!\n"), 0o644)

	tools := map[string]tool.Tool{}
	for _, t := range fs.NewTools(&sandbox.Policy{Root: dir}, nil) {
		tools[t.Spec().Name] = t
	}
	call := func(name, args string) {
		res, err := tools[name].Call(context.Background(), &tool.Call{
			ID: "1", Name: name, Args: json.RawMessage(args), Session: "demo", Progress: func(tool.Progress) {},
		})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Print(res.Parts[0].(*llm.Text).Text)
		fmt.Println()
	}
	call("edit", `{"path":"hello.txt","old_string":"world","new_string":"rein"}`)
	call("read", `{"path":"hello.txt"}`)
	call("edit", `{"path":"hello.txt","old_string":"world","new_string":"rein"}`)
	call("read", `{"path":"hello.txt"}`)
	// Output:
	// hello.txt has not been read in this session; read it before changing it, so the change is based on its current content
	//      1	Hello, world!
	//
	// Edited hello.txt: replaced 1 occurrence.
	//      1	Hello, rein!
	//      1	Hello, rein!
}

// loggedFiles is a Files that says what it writes, then writes to disk,
// as an editor host's would after updating its buffers.
type loggedFiles struct{ root string }

func (l loggedFiles) WriteFile(ctx context.Context, abs string, data []byte, perm os.FileMode) error {
	rel, _ := filepath.Rel(l.root, abs)
	fmt.Printf("host writes %s (%d bytes)\n", rel, len(data))
	return os.WriteFile(abs, data, perm)
}

// WithFiles makes the writing tools put new content through a host's
// Files, after their own checks: a path outside the workspace never
// reaches it.
func ExampleWithFiles() {
	dir, _ := os.MkdirTemp("", "rein-example")
	defer os.RemoveAll(dir)
	root, _ := filepath.EvalSymlinks(dir)
	tools := map[string]tool.Tool{}
	for _, t := range fs.WithFiles(fs.NewTools(&sandbox.Policy{Root: dir}, nil), loggedFiles{root}) {
		tools[t.Spec().Name] = t
	}
	for _, args := range []string{`{"path":"notes/todo.txt","content":"ship it\n"}`, `{"path":"../elsewhere.txt","content":"x"}`} {
		res, _ := tools["write"].Call(context.Background(), &tool.Call{ID: "1", Name: "write", Args: json.RawMessage(args), Session: "demo"})
		fmt.Println(strings.ReplaceAll(res.Parts[0].(*llm.Text).Text, dir, "ROOT"))
	}
	// Output:
	// host writes notes/todo.txt (8 bytes)
	// Created notes/todo.txt (1 line, 8 bytes).
	// path ../elsewhere.txt is outside the workspace ROOT; use a path inside it
}
