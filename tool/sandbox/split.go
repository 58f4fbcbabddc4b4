package sandbox

import "strings"

// simple is one simple command.
type simple struct {
	argv    []word
	heredoc *string // a here-document on its input
}

var redirections = map[string]bool{"<": true, ">": true, ">>": true, ">|": true, "<>": true, "<&": true, ">&": true, "&>": true, "&>>": true, "<<<": true}

// split groups tokens into simple commands, dropping redirections,
// assignments and reserved words.
func split(toks []token) ([]simple, error) {
	var out []simple
	sp := splitter{toks: toks}
	flush := func() { // ends the command being read
		if len(sp.cur.argv) > 0 {
			out = append(out, sp.cur)
		}
		sp.cur, sp.skip = simple{}, false
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		// [[ … ]] and (( … )) hold expressions, not commands; their
		// substitutions were collected when lexing.
		if sp.inTest {
			sp.inTest = !(t.op == "" && t.w.raw == "]]")
			continue
		}
		if sp.inArith {
			if t.op == ")" && sp.adjacent(i+1, ")") {
				sp.inArith = false
				i++
			}
			continue
		}
		var err error
		sep := false
		switch {
		case t.op == "(" && len(sp.cur.argv) == 0 && sp.adjacent(i+1, "("):
			sp.inArith = true
			i++
		case t.op != "":
			i, sep, err = sp.operator(i)
		case !t.fd:
			i, err = sp.word(i)
		}
		if err != nil {
			return nil, err
		}
		if sep {
			flush()
		}
	}
	if sp.inArith {
		// bash reads "((" without a matching "))" as nested subshells.
		return nil, unparsable("a \"((\" has no matching \"))\"")
	}
	flush()
	return out, nil
}

// splitter is the state of split: the command being read, and whether
// the tokens are inside [[ … ]] or (( … )).
type splitter struct {
	toks            []token
	cur             simple
	skip            bool // the rest of a for or select header
	inTest, inArith bool
}

// adjacent reports whether token i is the operator op written with no
// blank before it.
func (sp *splitter) adjacent(i int, op string) bool {
	return i < len(sp.toks) && sp.toks[i].op == op && sp.toks[i].adj
}

// operator handles the operator token i and returns the index of the last
// token it used; sep reports one that ends the command.
func (sp *splitter) operator(i int) (last int, sep bool, err error) {
	t := sp.toks[i]
	switch {
	case redirections[t.op]:
		if i+1 >= len(sp.toks) || sp.toks[i+1].op != "" {
			return i, false, unparsable("a redirection %q has no target", t.op)
		}
		return i + 1, false, nil
	case t.op == "<<" || t.op == "<<-":
		sp.cur.heredoc = t.hd
		return i + 1, false, nil
	case t.op == "(" && len(sp.cur.argv) > 0:
		if i+1 < len(sp.toks) && sp.toks[i+1].op == ")" && len(sp.cur.argv) == 1 {
			sp.cur = simple{} // a function definition: its body is checked where it stands
			return i + 1, false, nil
		}
		return i, false, unparsable("unexpected \"(\" after %q", sp.cur.argv[len(sp.cur.argv)-1].raw)
	}
	return i, true, nil
}

// word handles the word token i and returns the index of the last token
// it used. Reserved words and assignments before a command's name are not
// part of it.
func (sp *splitter) word(i int) (int, error) {
	w := sp.toks[i].w
	if len(sp.cur.argv) == 0 {
		if sp.skip {
			return i, nil
		}
		if w.lit && w.raw == w.val {
			switch w.val {
			case "{", "}", "!", "then", "do", "else", "elif", "if", "while", "until", "fi", "done":
				return i, nil
			case "for", "select":
				sp.skip = true
				return i, nil
			case "[[":
				sp.inTest = true
				return i, nil
			case "case", "coproc":
				return i, unparsable("%q is not supported", w.val)
			case "function":
				return i + 1, nil // the name; the body follows as a group
			}
		}
		if isAssignment(w.val) && !strings.HasPrefix(w.raw, "'") && !strings.HasPrefix(w.raw, "\"") {
			return i, nil
		}
	}
	sp.cur.argv = append(sp.cur.argv, w)
	return i, nil
}

// isAssignment reports whether s is a variable assignment ("FOO=1",
// "A+=x", "arr[2]=y").
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
