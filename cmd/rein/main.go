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

	"github.com/reinhq/rein/tool/exec"
)

func main() {
	exec.RunHelper() // when started as a sandbox helper, act as one
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// A closed terminal (SIGHUP) ends the turn like Ctrl-C and SIGTERM:
	// cancelled, recorded, its commands killed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// After the first signal, stop catching them: a second Ctrl-C then
	// ends the process at once.
	go func() { <-ctx.Done(); stop() }()
	// Everything rein prints passes the scrubber, the last line of
	// defence for secrets.
	secrets := newScrubber()
	out, errOut := secrets.writer(stdout), secrets.writer(stderr)
	defer errOut.Flush()
	defer out.Flush()
	app := &app{stdin: stdin, stdout: out, stderr: errOut, getenv: os.Getenv, secrets: secrets}
	app.outTTY, app.errTTY = terminals(stdout, stderr)
	cmd := app.rootCommand()
	cmd.SetArgs(args)
	cmd.SetIn(stdin)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	return exitCode(cmd.ExecuteContext(ctx), ctx.Err() != nil, errOut)
}

// exitCode reports err, what a command returned, on errOut and returns
// the process's exit code; interrupted says a signal came while it ran.
// A command interrupted before it could say how its turn ended (opening
// a store, submitting to a queue) exits as cancelled, as one whose turn
// a signal ended does.
func exitCode(err error, interrupted bool, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil && ce.code != exitCancelled {
			fmt.Fprintln(errOut, "rein:", ce.err)
		}
		return ce.code
	}
	fmt.Fprintln(errOut, "rein:", err)
	var ue *usageError
	switch {
	case errors.As(err, &ue) || isFlagError(err):
		return exitUsage
	case interrupted:
		return exitCancelled
	}
	return exitError
}
