package exec_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/reinhq/rein/tool/exec"
)

// A command gets only the environment it is given, and Close ends
// whatever the context started. NewSandbox would confine it too.
func Example() {
	ctx := exec.NewUnconfined()
	defer ctx.Close()
	var out bytes.Buffer
	p, err := ctx.Start(context.Background(), &exec.StartRequest{
		Argv:   []string{"sh", "-c", `echo "$GREETING from $PWD"`},
		Dir:    "/",
		Env:    exec.Environ([]string{"PATH"}, nil, []string{"GREETING=hello"}),
		Stdout: &out,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	code, _ := p.Wait()
	fmt.Print(out.String())
	fmt.Println("exit", code)
	// Output:
	// hello from /
	// exit 0
}
