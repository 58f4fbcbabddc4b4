package sandbox

import "strings"

// shells are the interpreters whose -c script (or here-document) is
// checked as a script of its own.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "yash": true, "rbash": true}

// wrappers are the programs that run the command after their options;
// the value lists the options that take a value.
var wrappers = map[string]map[string]bool{
	"command": nil, "builtin": nil, "nohup": nil, "setsid": nil, "time": nil, "unbuffer": nil, "busybox": nil,
	"exec":   set("-a"),
	"nice":   set("-n", "--adjustment"),
	"ionice": set("-c", "-n", "-t", "--class", "--classdata"),
	"stdbuf": set("-i", "-o", "-e"),
	"sudo":   sudoFlags,
	"doas":   sudoFlags,
	"xargs":  set("-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--replace"),
	"strace": traceFlags,
	"ltrace": traceFlags,

	"unshare": launchFlags, "setpriv": launchFlags, "nsenter": launchFlags, "caffeinate": launchFlags,
	"systemd-run": launchFlags, "firejail": launchFlags, "proxychains": launchFlags,
	"proxychains4": launchFlags, "torsocks": launchFlags, "catchsegv": launchFlags,
}

var (
	sudoFlags   = set("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R")
	traceFlags  = set("-o", "-e", "-p", "-s", "-u", "-E", "-a", "-P", "-I", "-b", "-X", "-O", "-S")
	launchFlags = set("-t", "-S", "-G", "-u", "--uid", "--gid", "--unit", "-p", "-q")
	chrootFlags = set("-w", "-E", "--userspec", "--groups")
	taskFlags   = set("-T", "-D", "-P")
)

// operandWrappers run the command after their options and one operand
// (a duration, a directory, a lock file, a CPU mask or a priority).
var operandWrappers = map[string]map[string]bool{
	"timeout": set("-s", "-k", "--signal", "--kill-after"),
	"chroot":  chrootFlags,
	"flock":   chrootFlags,
	"taskset": taskFlags,
	"chrt":    taskFlags,
}

// unwrap returns the command a wrapper runs. handled is false when name
// is not a wrapper; next is nil when the wrapper's payload was checked
// here (a script) or there is none.
func (c *checker) unwrap(name string, args []word, sc simple, depth int) (next []word, handled bool, err error) {
	if flags, ok := wrappers[name]; ok {
		return skipFlags(args, flags), true, nil
	}
	if flags, ok := operandWrappers[name]; ok {
		rest := skipFlags(args, flags)
		if len(rest) > 0 {
			rest = rest[1:]
		}
		if name == "flock" && len(rest) > 1 && (rest[0].val == "-c" || rest[0].val == "--command") {
			return nil, true, c.scriptWord(rest[1], depth)
		}
		return rest, true, nil
	}
	switch name {
	case "env":
		return c.env(args, depth)
	case "eval":
		return nil, true, c.joined(name, args, depth)
	case "watch":
		return nil, true, c.joined(name, skipFlags(args, set("-n", "-d", "--interval", "--differences")), depth)
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
		if rest := skipFlags(args, nil); len(rest) > 0 {
			return nil, true, c.scriptWord(rest[0], depth)
		}
		return nil, true, nil
	case "source", ".":
		if len(args) > 0 && !args[0].lit {
			return nil, true, unparsable("%s reads a script that is only known when it runs", name)
		}
		return nil, false, nil
	case "find":
		return nil, false, c.findExec(args, depth)
	}
	if shells[name] {
		return nil, true, c.shell(name, args, sc, depth)
	}
	return nil, false, nil
}

// env returns the command env runs after its options and assignments, or
// checks the script of env -S.
func (c *checker) env(args []word, depth int) (next []word, handled bool, err error) {
	rest := args
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
			return rest, true, nil
		}
	}
	return rest, true, nil
}

// joined checks the script prog (eval or watch) makes of its arguments
// joined by spaces.
func (c *checker) joined(prog string, args []word, depth int) error {
	var b strings.Builder
	for i, w := range args {
		if !w.lit {
			return unparsable("%s runs %q, which is only known when it runs", prog, w.raw)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.val)
	}
	return c.script(b.String(), depth+1)
}

// findExec checks the commands find runs with -exec and its kin.
func (c *checker) findExec(args []word, depth int) error {
	for i := 0; i < len(args); i++ {
		switch args[i].val {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].val != ";" && args[j].val != "+" {
				j++
			}
			if err := c.command(simple{argv: args[i+1 : j]}, depth+1); err != nil {
				return err
			}
			i = j
		}
	}
	return nil
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
