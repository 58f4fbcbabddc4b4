package sandbox_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/reinhq/rein/tool/sandbox"
)

func ExampleCommandRules_Check() {
	rules := sandbox.CommandRules{Deny: []string{"rm -rf", "git push"}}
	for _, line := range []string{
		"go test ./... && git status",
		"cd build; bash -c 'rm -fr /tmp/x'",
		"FOO=1 /usr/bin/git -C repo push",
		"$CMD --force",
	} {
		err := rules.Check(line)
		switch {
		case err == nil:
			fmt.Println("ok:     ", line)
		case errors.Is(err, sandbox.ErrCommandDenied):
			fmt.Println("denied: ", line)
		case errors.Is(err, sandbox.ErrUnparsable):
			fmt.Println("refused:", line)
		}
	}
	// Output:
	// ok:      go test ./... && git status
	// denied:  cd build; bash -c 'rm -fr /tmp/x'
	// denied:  FOO=1 /usr/bin/git -C repo push
	// refused: $CMD --force
}

func ExamplePolicy_Open() {
	dir, _ := os.MkdirTemp("", "rein-ws")
	defer os.RemoveAll(dir)
	p := &sandbox.Policy{Root: dir}
	_, err := p.Open("../etc/passwd", os.O_RDONLY, 0)
	fmt.Println(errors.Is(err, sandbox.ErrOutside))
	// Output:
	// true
}
