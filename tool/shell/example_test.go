//go:build unix

package shell_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
)

func Example() {
	dir, _ := os.MkdirTemp("", "rein-shell")
	defer os.RemoveAll(dir)
	sh := shell.New(&shell.Options{Policy: &sandbox.Policy{Root: dir,
		Commands: sandbox.CommandRules{Deny: []string{"git push"}}}})
	defer sh.Close()

	tools := map[string]tool.Tool{}
	for _, t := range sh.Tools() {
		tools[t.Spec().Name] = t
	}
	run := func(args string) string {
		res, _ := tools["shell"].Call(context.Background(), &tool.Call{Name: "shell", Args: json.RawMessage(args)})
		return res.Parts[0].(*llm.Text).Text
	}
	out := run(`{"command":"echo hello from $(basename $0)"}`)
	fmt.Println(strings.SplitN(out, "\n", 2)[0])
	fmt.Println(run(`{"command":"git commit -qam wip && git push"}`))
	// Output:
	// hello from bash
	// the command "git push" is denied by the workspace rule "git push"; do it another way or ask the user to run it
}
