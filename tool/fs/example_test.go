package fs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

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
