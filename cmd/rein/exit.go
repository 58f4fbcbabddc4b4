package main

// Exit codes, a contract other tools rely on.
const (
	exitOK        = 0   // the turn completed
	exitError     = 1   // the turn ended in error
	exitUsage     = 2   // a usage or configuration error
	exitStopped   = 3   // the turn ended by a limit, a budget or a block
	exitCancelled = 130 // cancelled by Ctrl-C
)

// exitError carries an exit code out of a command.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }
