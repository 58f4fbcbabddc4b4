// Package sandbox is the workspace policy rein's built-in tools obey: it
// confines every filesystem access to one directory tree and decides
// which shell command lines may run.
//
// Quick start:
//
//	p := &sandbox.Policy{
//		Root:     "/home/me/project",
//		Deny:     []string{".git/objects", "private/**"},
//		Commands: sandbox.CommandRules{Deny: []string{"rm -rf", "git push", "sudo"}},
//	}
//	f, err := p.Open("src/main.go", os.O_RDONLY, 0) // refuses ../x, /etc/x, symlinks out, devices, FIFOs
//	if errors.Is(err, sandbox.ErrOutside) { … }
//	if err := p.Commands.Check("make && git push"); err != nil {
//		// *CommandError naming the rule "git push"
//	}
//
// Confinement is enforced by the kernel where it can be: on Linux, paths
// are opened with openat2 and RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS beneath
// a descriptor of the root, after symlinks have been resolved by hand and
// checked (so a symlink swapped in between the check and the open makes
// the open fail rather than escape). Kernels without openat2 get the same
// guarantee from a walk of openat calls with O_NOFOLLOW. Other platforms
// refuse every access (ErrUnsupported) rather than confine weakly.
//
// Errors are written for a model to act on: each names the path, says why
// it was refused and what to do instead, and wraps one of ErrOutside,
// ErrDenied, ErrReadOnly, ErrNeedsApproval, ErrCommandDenied or
// ErrUnparsable.
//
// CommandRules are a guard rail, not a security boundary: see its
// documentation for exactly what Check follows and what it cannot stop.
package sandbox
