package sandbox

import (
	"errors"
	"fmt"
	"path"
)

// Sentinel errors of CommandRules.Check.
var (
	// ErrCommandDenied: a command in the line matches a Deny rule or no
	// Allow rule.
	ErrCommandDenied = errors.New("sandbox: command denied by policy")
	// ErrUnparsable: the line could not be checked (a syntax the checker
	// does not follow, or a command name built at run time), so it is
	// refused.
	ErrUnparsable = errors.New("sandbox: command cannot be checked")
)

// CommandRules decide which shell command lines may run.
//
// A rule is either a command prefix or a glob. A prefix such as "rm -rf",
// "git push" or "curl" names a program (matched against the program's base
// name, so "/bin/rm" and "\rm" are rm) and then words that must all occur
// in the command: short flags letter by letter in any order and grouping
// ("rm -rf" matches "rm -r -f", "rm -fr" and "rm x -rf"), long flags as
// written (also "--flag=value"), and other words in order but not
// necessarily adjacent ("git push" matches "git -C dir push origin"). For
// rm, cp, git, chmod and chown the common long forms count as their short
// flags ("rm --recursive --force" matches "rm -rf"). A
// rule holding "*", "?" or "[" is a glob matched against the whole
// normalised command (program base name and arguments joined by single
// spaces), with "*" matching any text.
//
// Check parses the line as a shell would — quoting, escapes, comments,
// line continuations, here-documents — and checks every simple command in
// it: those joined by ";", "&&", "||", "|", "&" and newlines, inside
// "$(…)", backticks, "<(…)", "( … )" subshells, "{ …; }" groups, if/while
// bodies and functions, the script of "sh -c", "bash -c" (and the other
// common shells), "eval" and "env -S", commands run by "find -exec" and
// "xargs", and here-documents fed to a shell. Before matching it strips
// variable assignments ("FOO=1 rm …") and the wrappers command, builtin,
// exec, env, sudo, doas, su, nohup, setsid, time, nice, ionice, chrt,
// taskset, stdbuf, timeout, chroot, busybox, flock, strace, unshare,
// script and xargs, and checks the scripts given to alias and trap; each
// layer is matched too, so a rule "sudo" still denies "sudo ls". Any other
// program that runs a command it is given counts as itself.
//
// Deny wins over Allow. With Allow empty every command not denied may run;
// otherwise each command (after stripping wrappers) must match an Allow
// rule. When a Deny rule names the program and an argument is only known
// at run time ("rm $FLAGS /", "rm -r? /"), the command is denied: the
// checker cannot rule the match out.
//
// Check fails closed: a line it cannot follow is refused with
// ErrUnparsable — a command name built at run time ("$X", "$(which rm)",
// "{rm,-rf,/}", "/bin/r?"), a shell script given as a variable, a shell
// reading commands from a pipe or file instead of -c, "case" statements,
// and unbalanced quotes or parentheses.
//
// What it cannot stop, by design: a command run by a script file or
// program ("bash script.sh", "source x", "make", "python -c …", "git -c
// alias.x=!…", launchers it does not know), programs that do the denied thing by another name ("find
// -delete", "unlink", "perl -e"), commands run on another machine ("ssh
// host rm …"), aliases and functions defined in startup files (bash -c
// does not read them unless told to), and anything the allowed programs
// do on their own. CommandRules are a guard rail against mistakes, not a
// security boundary; run untrusted work in a container.
type CommandRules struct {
	Allow []string
	Deny  []string
}

// CommandError is a refused command line. Its message names the command
// and the rule, and says what to do next.
type CommandError struct {
	Command string // the simple command that was refused, normalised
	Rule    string // the rule that refused it, empty for ErrUnparsable
	Err     error  // ErrCommandDenied or ErrUnparsable
	Reason  string // the complete message
}

// Error returns the model-facing message.
func (e *CommandError) Error() string { return e.Reason }

// Unwrap returns ErrCommandDenied or ErrUnparsable.
func (e *CommandError) Unwrap() error { return e.Err }

// maxNesting bounds sh -c / eval / substitution recursion.
const maxNesting = 16

// Check reports whether cmdline may run under the rules: nil, or a
// *CommandError wrapping ErrCommandDenied or ErrUnparsable. With no rules
// at all every line may run and nothing is parsed.
func (r CommandRules) Check(cmdline string) error {
	if len(r.Allow) == 0 && len(r.Deny) == 0 {
		return nil
	}
	c := checker{rules: r}
	return c.script(cmdline, 0)
}

type checker struct {
	rules CommandRules
}

func unparsable(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &CommandError{Err: ErrUnparsable,
		Reason: "the command line cannot be checked against the workspace's command rules: " + msg + "; write it as plain commands"}
}

func (c *checker) script(src string, depth int) error {
	if depth > maxNesting {
		return unparsable("commands are nested too deeply")
	}
	lx := &lexer{src: src}
	toks, err := lx.run(false)
	if err != nil {
		return err
	}
	for _, sub := range lx.subs {
		if err := c.script(sub, depth+1); err != nil {
			return err
		}
	}
	cmds, err := split(toks)
	if err != nil {
		return err
	}
	for _, sc := range cmds {
		if err := c.command(sc, depth); err != nil {
			return err
		}
	}
	return nil
}

// command checks one simple command, peeling wrappers layer by layer.
func (c *checker) command(sc simple, depth int) error {
	argv := sc.argv
	for len(argv) > 0 {
		prog := argv[0]
		if !prog.lit || prog.glob {
			return unparsable("the command name %q is only known when it runs", prog.raw)
		}
		if err := c.match(argv, false); err != nil {
			return err
		}
		name := path.Base(prog.val)
		rest := argv[1:]
		next, handled, err := c.unwrap(name, rest, sc, depth)
		if err != nil {
			return err
		}
		if !handled {
			// The innermost command: it must also be allowed.
			return c.match(argv, true)
		}
		if name == "sudo" || name == "doas" {
			if err := c.match(argv, true); err != nil {
				return err
			}
		}
		argv = next
	}
	return nil
}
