// Command rein runs a language model in a loop with tools and keeps every
// step on a session log that can be resumed, exported and replayed.
//
//	rein run "fix the failing test"        one turn, then exit
//	rein chat                              an interactive terminal UI
//	rein sessions list                     what has been recorded
//	rein replay examples/sessions/hello.ndjson   watch a recorded session offline
//
// Run 'rein help' for every command and flag.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, stop catching them: a second Ctrl-C then
	// ends the process at once.
	go func() { <-ctx.Done(); stop() }()
	app := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	cmd := app.rootCommand()
	cmd.SetArgs(args)
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil && ce.code != exitCancelled {
			fmt.Fprintln(stderr, "rein:", ce.err)
		}
		return ce.code
	}
	fmt.Fprintln(stderr, "rein:", err)
	var ue *usageError
	if errors.As(err, &ue) || isFlagError(err) {
		return exitUsage
	}
	return exitError
}
