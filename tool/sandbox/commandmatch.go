package sandbox

import (
	"fmt"
	"path"
	"strings"
)

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
