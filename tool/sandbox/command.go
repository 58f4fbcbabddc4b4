package sandbox

import (
	"errors"
	"fmt"
	"path"
	"strings"
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

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "yash": true, "rbash": true}

// unwrap returns the command a wrapper runs. handled is false when name
// is not a wrapper; next is nil when the wrapper's payload was checked
// here (a script) or there is none.
func (c *checker) unwrap(name string, args []word, sc simple, depth int) (next []word, handled bool, err error) {
	switch name {
	case "command", "builtin":
		return skipFlags(args, nil), true, nil
	case "exec":
		return skipFlags(args, set("-a")), true, nil
	case "nohup", "setsid", "time", "unbuffer", "busybox":
		return skipFlags(args, nil), true, nil
	case "nice":
		return skipFlags(args, set("-n", "--adjustment")), true, nil
	case "ionice":
		return skipFlags(args, set("-c", "-n", "-t", "--class", "--classdata")), true, nil
	case "stdbuf":
		return skipFlags(args, set("-i", "-o", "-e")), true, nil
	case "sudo", "doas":
		return skipFlags(args, set("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R")), true, nil
	case "timeout":
		rest := skipFlags(args, set("-s", "-k", "--signal", "--kill-after"))
		if len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		return rest, true, nil
	case "chroot", "flock":
		rest := skipFlags(args, set("-w", "-E", "--userspec", "--groups"))
		if len(rest) > 0 {
			rest = rest[1:] // the directory or lock file
		}
		if name == "flock" && len(rest) > 1 && (rest[0].val == "-c" || rest[0].val == "--command") {
			return nil, true, c.scriptWord(rest[1], depth)
		}
		return rest, true, nil
	case "xargs":
		return skipFlags(args, set("-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--replace")), true, nil
	case "env":
		rest := args
	envLoop:
		for len(rest) > 0 {
			w := rest[0]
			switch {
			case w.val == "-S" || w.val == "--split-string":
				if len(rest) < 2 {
					return nil, true, nil
				}
				return nil, true, c.scriptWord(rest[1], depth)
			case strings.HasPrefix(w.val, "-S"):
				return nil, true, c.scriptWord(word{val: w.val[2:], raw: w.raw, lit: w.lit}, depth)
			case w.val == "-u" || w.val == "-C" || w.val == "--unset" || w.val == "--chdir":
				rest = rest[min(2, len(rest)):]
			case strings.HasPrefix(w.val, "-") || isAssignment(w.val):
				rest = rest[1:]
			default:
				break envLoop
			}
		}
		return rest, true, nil
	case "eval":
		var b strings.Builder
		for i, w := range args {
			if !w.lit {
				return nil, true, unparsable("eval runs %q, which is only known when it runs", w.raw)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w.val)
		}
		return nil, true, c.script(b.String(), depth+1)
	case "strace", "ltrace":
		return skipFlags(args, set("-o", "-e", "-p", "-s", "-u", "-E", "-a", "-P", "-I", "-b", "-X", "-O", "-S")), true, nil
	case "unshare", "setpriv", "nsenter", "caffeinate", "systemd-run", "firejail", "proxychains", "proxychains4", "torsocks", "catchsegv":
		return skipFlags(args, set("-t", "-S", "-G", "-u", "--uid", "--gid", "--unit", "-p", "-q")), true, nil
	case "taskset", "chrt":
		rest := skipFlags(args, set("-T", "-D", "-P"))
		if len(rest) > 0 {
			rest = rest[1:] // the mask or priority
		}
		return rest, true, nil
	case "su", "runuser", "script":
		for i := 0; i+1 < len(args); i++ {
			if v := args[i].val; v == "-c" || v == "--command" {
				return nil, true, c.scriptWord(args[i+1], depth)
			}
		}
		return nil, true, nil
	case "alias":
		for _, w := range args {
			if _, val, ok := strings.Cut(w.val, "="); ok {
				if err := c.scriptWord(word{val: val, raw: w.raw, lit: w.lit}, depth); err != nil {
					return nil, true, err
				}
			}
		}
		return nil, true, nil
	case "trap":
		rest := skipFlags(args, nil)
		if len(rest) > 0 {
			return nil, true, c.scriptWord(rest[0], depth)
		}
		return nil, true, nil
	case "source", ".":
		if len(args) > 0 && !args[0].lit {
			return nil, true, unparsable("%s reads a script that is only known when it runs", name)
		}
		return nil, false, nil
	case "watch":
		rest := skipFlags(args, set("-n", "-d", "--interval", "--differences"))
		var b strings.Builder
		for i, w := range rest {
			if !w.lit {
				return nil, true, unparsable("watch runs %q, which is only known when it runs", w.raw)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w.val)
		}
		return nil, true, c.script(b.String(), depth+1)
	case "find":
		for i := 0; i < len(args); i++ {
			switch args[i].val {
			case "-exec", "-execdir", "-ok", "-okdir":
				j := i + 1
				for j < len(args) && args[j].val != ";" && args[j].val != "+" {
					j++
				}
				if err := c.command(simple{argv: args[i+1 : j]}, depth+1); err != nil {
					return nil, true, err
				}
				i = j
			}
		}
		return nil, false, nil
	}
	if shells[name] {
		return nil, true, c.shell(name, args, sc, depth)
	}
	return nil, false, nil
}

// shell checks what a shell interpreter is asked to run.
func (c *checker) shell(name string, args []word, sc simple, depth int) error {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.lit {
			return unparsable("%s is given %q, which is only known when it runs", name, w.raw)
		}
		v := w.val
		if v == "--" || !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+") {
			// A script file: what it runs cannot be seen from here, so
			// with an allow-list the shell itself must be allowed.
			return c.match(append([]word{{val: name, raw: name, lit: true}}, args...), true)
		}
		if v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file" {
			i++
			continue
		}
		if !strings.HasPrefix(v, "--") && strings.Contains(v[1:], "c") {
			for j := i + 1; j < len(args); j++ {
				if a := args[j].val; strings.HasPrefix(a, "-") && args[j].lit && a != "-" {
					continue
				}
				return c.scriptWord(args[j], depth)
			}
			return unparsable("%s -c has no command", name)
		}
	}
	if sc.heredoc != nil {
		return c.script(*sc.heredoc, depth+1)
	}
	return unparsable("%s reads its commands from its input, which cannot be seen; pass them with %s -c '…'", name, name)
}

func (c *checker) scriptWord(w word, depth int) error {
	if !w.lit {
		return unparsable("the script %q is only known when it runs", w.raw)
	}
	return c.script(w.val, depth+1)
}

func set(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}

// skipFlags drops leading options (and the values of those in withArg)
// and a "--".
func skipFlags(args []word, withArg map[string]bool) []word {
	for len(args) > 0 {
		v := args[0].val
		if v == "--" {
			return args[1:]
		}
		if len(v) < 2 || v[0] != '-' {
			return args
		}
		if withArg[v] && len(args) > 1 {
			args = args[2:]
			continue
		}
		args = args[1:]
	}
	return args
}

func isAssignment(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	name := strings.TrimSuffix(s[:eq], "+")
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		name = name[:i]
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != ""
}

// match applies the rules to argv. With allow false only Deny is
// checked; with allow true only Allow.
func (c *checker) match(argv []word, allow bool) error {
	norm := normalise(argv)
	if !allow {
		for _, rule := range c.rules.Deny {
			if ruleMatches(rule, argv, true) {
				return &CommandError{Command: norm, Rule: rule, Err: ErrCommandDenied,
					Reason: fmt.Sprintf("the command %q is denied by the workspace rule %q; do it another way or ask the user to run it", norm, rule)}
			}
		}
		return nil
	}
	if len(c.rules.Allow) == 0 {
		return nil
	}
	for _, rule := range c.rules.Allow {
		if ruleMatches(rule, argv, false) {
			return nil
		}
	}
	return &CommandError{Command: norm, Err: ErrCommandDenied,
		Reason: fmt.Sprintf("the command %q is not allowed in this workspace (allowed: %s); use one of those or ask the user", norm, strings.Join(c.rules.Allow, ", "))}
}

func normalise(argv []word) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == 0 {
			b.WriteString(path.Base(w.val))
		} else if w.lit {
			b.WriteString(w.val)
		} else {
			b.WriteString(w.raw)
		}
	}
	return b.String()
}

// ruleMatches reports whether rule matches argv. possible makes words
// only known at run time count as matching (for Deny).
func ruleMatches(rule string, argv []word, possible bool) bool {
	if len(argv) == 0 {
		return false
	}
	unknown := false
	for _, w := range argv[1:] {
		if !w.lit {
			unknown = true
		}
	}
	if strings.ContainsAny(rule, "*?[") {
		if unknown && possible {
			prog := strings.Fields(rule)
			if len(prog) > 0 && !strings.ContainsAny(prog[0], "*?[") && path.Base(prog[0]) != path.Base(argv[0].val) {
				return false
			}
			return true
		}
		return globText(rule, normalise(argv))
	}
	pw := strings.Fields(rule)
	if len(pw) == 0 || path.Base(pw[0]) != path.Base(argv[0].val) {
		return false
	}
	if unknown && possible {
		return true
	}
	args := argv[1:]
	aliases := flagAliases[path.Base(argv[0].val)]
	var short = map[rune]bool{}
	for _, a := range args {
		if !a.lit || len(a.val) < 2 || a.val[0] != '-' {
			continue
		}
		if a.val[1] != '-' {
			for _, r := range a.val[1:] {
				short[r] = true
				if l, ok := aliases[string(r)]; ok {
					short[rune(l[0])] = true
				}
			}
		} else if l, ok := aliases[strings.SplitN(a.val, "=", 2)[0]]; ok {
			short[rune(l[0])] = true
		}
	}
	pos := 0
	for _, p := range pw[1:] {
		switch {
		case strings.HasPrefix(p, "--"):
			found := false
			for _, a := range args {
				if a.val == p || strings.HasPrefix(a.val, p+"=") {
					found = true
				}
			}
			if l, ok := aliases[p]; ok && short[rune(l[0])] {
				found = true
			}
			if !found {
				return false
			}
		case len(p) > 1 && p[0] == '-':
			for _, r := range p[1:] {
				if !short[r] {
					return false
				}
			}
		default:
			for pos < len(args) && args[pos].val != p {
				pos++
			}
			if pos == len(args) {
				return false
			}
			pos++
		}
	}
	return true
}

// flagAliases lists, for a few programs whose rules matter most, long
// options and letters that mean the same as a short flag, so "rm -rf"
// also matches "rm --recursive --force" and "rm -R -f", and "git push
// --force" matches "git push -f".
var flagAliases = map[string]map[string]string{
	"rm":    {"--recursive": "r", "R": "r", "--force": "f"},
	"cp":    {"--recursive": "r", "R": "r", "--force": "f"},
	"git":   {"--force": "f", "--delete": "d"},
	"chmod": {"--recursive": "R"},
	"chown": {"--recursive": "R"},
}

// globText matches s against a glob whose "*" matches any text.
func globText(pat, s string) bool {
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(pat) || sx < len(s) {
		if px < len(pat) {
			switch ch := pat[px]; ch {
			case '*':
				nextPx, nextSx = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			case '[':
				if sx < len(s) {
					end := strings.IndexByte(pat[px+1:], ']')
					if end >= 0 {
						if ok, err := path.Match(pat[px:px+end+2], s[sx:sx+1]); err == nil && ok {
							px += end + 2
							sx++
							continue
						}
					}
				}
			default:
				if sx < len(s) && s[sx] == ch {
					px++
					sx++
					continue
				}
			}
		}
		if nextSx > 0 && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}
