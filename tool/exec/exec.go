package exec

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"strings"
)

// Context is where commands run. Implementations are safe for
// concurrent use.
type Context interface {
	// Start starts a command. ctx bounds the start only; the process runs
	// until it exits, is signalled, or the context is closed.
	Start(ctx context.Context, req *StartRequest) (Process, error)
	// Info describes the context.
	Info() Info
	// Close kills every process the context started, waits for them and
	// releases what the context holds (its private temporary directory).
	// Start fails after Close. Close is idempotent.
	Close() error
}

// Info describes a Context.
type Info struct {
	// Name is "unconfined", "bubblewrap" or "landlock".
	Name string
	// Confined reports whether the context keeps the confinement
	// promises of the package contract.
	Confined bool
	// Network reports whether a confined context lets processes reach
	// the network.
	Network bool
	// Hosts are the only hosts a confined context without Network lets
	// processes reach, through its proxy; none means no network.
	Hosts []string
}

// StartRequest is one command to start.
type StartRequest struct {
	// Argv is the program and its arguments; Argv[0] is looked up in
	// Env's PATH when it has no slash. Required.
	Argv []string
	// Dir is the working directory. Required.
	Dir string
	// Env is the whole environment, as "NAME=value" entries.
	Env []string
	// Stdin is the input; nil reads nothing.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it. Pass the
	// same *os.File to both to interleave them.
	Stdout, Stderr io.Writer
}

// Process is a started command and the process group it leads.
type Process interface {
	// Pid is the leader's process id as rein sees it (also the group id).
	// A sandbox's leader is the init of the command's PID namespace,
	// which may run several commands one after another: they share it.
	Pid() int
	// Signal sends sig to every process of the group. Signalling a
	// process that has ended is not an error.
	Signal(sig os.Signal) error
	// Wait waits for the leader to end and returns its exit code (-1 when
	// a signal ended it) and, when it did not exit with 0, an error that
	// says how it ended (an *os/exec.ExitError when rein started the
	// process itself; "exit status N" or "signal: killed" from a
	// sandbox's spawner). Wait may be called more than once.
	Wait() (int, error)
	// Done is closed when the leader has ended.
	Done() <-chan struct{}
	// Alive reports whether any process of the group still runs.
	Alive() bool
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("exec: the execution context is closed; start a new one")

// DefaultEnv is the allow-list Environ uses when it is given none: what
// programs need to find themselves, speak the user's language and draw
// on a terminal, and nothing that could carry a credential.
var DefaultEnv = []string{"PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "TZ", "USER", "LOGNAME", "SHELL", "HOME"}

// Environ builds a child environment from rein's own: only variables
// whose names match allow (names or path.Match patterns such as "LC_*";
// nil means DefaultEnv), where a name that looks like a credential
// (CredentialName) matches only an exact entry, never a pattern; minus
// any variable whose value contains one of secrets; plus set (appended
// last, so it wins).
func Environ(allow, secrets, set []string) []string {
	if allow == nil {
		allow = DefaultEnv
	}
	var out []string
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !allowed(allow, name) || holdsSecret(value, secrets) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

func allowed(allow []string, name string) bool {
	cred := CredentialName(name)
	for _, pat := range allow {
		if pat == name {
			return true
		}
		if m, _ := path.Match(pat, name); m && !cred {
			return true
		}
	}
	return false
}

// CredentialName reports whether an environment variable's name looks
// like it holds a credential: it contains KEY, TOKEN, SECRET, PASSWORD,
// PASSWD, CREDENTIAL or PRIVATE.
func CredentialName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func holdsSecret(value string, secrets []string) bool {
	for _, s := range secrets {
		if s != "" && strings.Contains(value, s) {
			return true
		}
	}
	return false
}

// checkRequest says what is wrong with req, or nil.
func checkRequest(req *StartRequest) error {
	if req == nil || len(req.Argv) == 0 || req.Argv[0] == "" {
		return errors.New("exec: StartRequest.Argv is empty; name the program to run")
	}
	if req.Dir == "" {
		return errors.New("exec: StartRequest.Dir is empty; give the working directory")
	}
	return nil
}
