package sandbox

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// word is one shell word after quote removal. lit is false when part of
// its value is only known at run time (a parameter, a command
// substitution, a brace expansion); glob is set when it holds unquoted
// pattern characters.
type word struct {
	val  string
	raw  string
	lit  bool
	glob bool
}

type token struct {
	op string  // an operator, or "" for a word
	w  word    // the word
	fd bool    // a file-descriptor number that belongs to a redirection
	hd *string // the body of a here-document, for "<<" and "<<-"
	// adj: no blank between this token and the one before ("((" vs "( (").
	adj bool
}

type heredoc struct {
	delim  string
	quoted bool
	strip  bool
	body   *string
}

// lexer splits shell source into tokens, collecting the bodies of command
// and process substitutions (and of unquoted here-documents) in subs so
// they can be checked as scripts of their own.
type lexer struct {
	src     string
	pos     int
	subs    []string
	pending []heredoc
}

var operators = []string{"&&", "||", ";;", ";&", "|&", "&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">&", ">>", ">|", "<(", ">(", ";", "|", "&", "(", ")", "<", ">"}

// run lexes to the end of src, or with inParen to the ")" that closes a
// "$(" or "<(" opened just before pos.
func (l *lexer) run(inParen bool) ([]token, error) {
	var toks []token
	depth := 0
	for {
		start := l.pos
		for l.pos < len(l.src) {
			if c := l.src[l.pos]; c == ' ' || c == '\t' || c == '\r' {
				l.pos++
			} else if c == '\\' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\n' {
				l.pos += 2
			} else {
				break
			}
		}
		if l.pos >= len(l.src) {
			if inParen {
				return nil, unparsable("a \"(\" is never closed")
			}
			for _, h := range l.pending {
				*h.body = ""
			}
			l.pending = nil
			return toks, nil
		}
		c := l.src[l.pos]
		if c == '#' {
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
			continue
		}
		if c == '\n' {
			l.pos++
			toks = append(toks, token{op: ";"})
			if err := l.readHeredocs(); err != nil {
				return nil, err
			}
			continue
		}
		op := ""
		for _, o := range operators {
			if strings.HasPrefix(l.src[l.pos:], o) {
				op = o
				break
			}
		}
		if op == "" {
			w, fd, err := l.word()
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{w: w, fd: fd})
			continue
		}
		l.pos += len(op)
		switch op {
		case ";;", ";&":
			return nil, unparsable("case statements are not supported")
		case "<(", ">(":
			start := l.pos
			if err := l.sub(); err != nil {
				return nil, err
			}
			toks = append(toks, token{w: word{raw: l.src[start-2 : l.pos], lit: false}})
			continue
		case "(":
			depth++
		case ")":
			if inParen && depth == 0 {
				return toks, nil
			}
			if depth == 0 {
				return nil, unparsable("a \")\" has no matching \"(\"")
			}
			depth--
		case "<<", "<<-":
			for l.pos < len(l.src) && (l.src[l.pos] == ' ' || l.src[l.pos] == '\t') {
				l.pos++
			}
			w, _, err := l.word()
			if err != nil {
				return nil, err
			}
			if w.raw == "" {
				return nil, unparsable("a here-document has no delimiter")
			}
			body := new(string)
			l.pending = append(l.pending, heredoc{delim: w.val, quoted: strings.ContainsAny(w.raw, "'\"\\"), strip: op == "<<-", body: body})
			toks = append(toks, token{op: op, hd: body}, token{w: w})
			continue
		}
		toks = append(toks, token{op: op, adj: l.pos-len(op) == start})
	}
}

// sub lexes a "$(" or "<(" body starting at pos and records it.
func (l *lexer) sub() error {
	start := l.pos
	inner := &lexer{src: l.src, pos: l.pos}
	if _, err := inner.run(true); err != nil {
		return err
	}
	l.pos = inner.pos
	l.subs = append(l.subs, l.src[start:l.pos-1])
	return nil
}

func (l *lexer) readHeredocs() error {
	for _, h := range l.pending {
		var b strings.Builder
		found := false
		for l.pos < len(l.src) {
			end := strings.IndexByte(l.src[l.pos:], '\n')
			line := l.src[l.pos:]
			if end >= 0 {
				line = line[:end]
				l.pos += end + 1
			} else {
				l.pos = len(l.src)
			}
			if h.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				found = true
				break
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
		_ = found // bash runs an unterminated here-document to the end
		*h.body = b.String()
		if !h.quoted {
			inner := &lexer{src: *h.body}
			for inner.pos < len(inner.src) {
				if _, err := inner.dquoteChar(new(strings.Builder), new(bool), false); err != nil {
					return err
				}
			}
			l.subs = append(l.subs, inner.subs...)
		}
	}
	l.pending = nil
	return nil
}

func isOpChar(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

// word reads one word. fd reports a bare number written right before a
// redirection operator ("2>").
func (l *lexer) word() (word, bool, error) {
	start := l.pos
	var b strings.Builder
	lit, glob := true, false
	braceOpen, braceList := false, false
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if isOpChar(c) {
			break
		}
		switch c {
		case '\\':
			if l.pos+1 < len(l.src) {
				if l.src[l.pos+1] != '\n' {
					_, n := utf8.DecodeRuneInString(l.src[l.pos+1:])
					b.WriteString(l.src[l.pos+1 : l.pos+1+n])
					l.pos += 1 + n
				} else {
					l.pos += 2
				}
			} else {
				b.WriteByte('\\')
				l.pos++
			}
		case '\'':
			end := strings.IndexByte(l.src[l.pos+1:], '\'')
			if end < 0 {
				return word{}, false, unparsable("a single quote is never closed")
			}
			b.WriteString(l.src[l.pos+1 : l.pos+1+end])
			l.pos += end + 2
		case '"':
			l.pos++
			closed := false
			for l.pos < len(l.src) {
				if l.src[l.pos] == '"' {
					l.pos++
					closed = true
					break
				}
				if _, err := l.dquoteChar(&b, &lit, true); err != nil {
					return word{}, false, err
				}
			}
			if !closed {
				return word{}, false, unparsable("a double quote is never closed")
			}
		case '$':
			if strings.HasPrefix(l.src[l.pos:], "$'") {
				s, err := l.ansiC()
				if err != nil {
					return word{}, false, err
				}
				b.WriteString(s)
				continue
			}
			if strings.HasPrefix(l.src[l.pos:], "$\"") {
				l.pos++ // a locale string is a double-quoted one
				continue
			}
			if _, err := l.dquoteChar(&b, &lit, false); err != nil {
				return word{}, false, err
			}
		case '`':
			if _, err := l.dquoteChar(&b, &lit, false); err != nil {
				return word{}, false, err
			}
		default:
			switch c {
			case '*', '?', '[':
				glob = true
			case '{':
				braceOpen = true
			case ',':
				braceList = braceList || braceOpen
			case '.':
				if braceOpen && strings.HasPrefix(l.src[l.pos:], "..") {
					braceList = true
				}
			case '}':
				if braceList {
					lit = false // brace expansion: the words are made at run time
				}
			}
			b.WriteByte(c)
			l.pos++
		}
	}
	raw := l.src[start:l.pos]
	fd := false
	if l.pos < len(l.src) && (l.src[l.pos] == '<' || l.src[l.pos] == '>') && raw != "" {
		fd = strings.Trim(raw, "0123456789") == ""
	}
	return word{val: b.String(), raw: raw, lit: lit, glob: glob}, fd, nil
}

// dquoteChar consumes one unit at pos: inside double quotes (dq) or a
// "$"/"`" expansion outside them. Substitution bodies go to subs; any
// expansion clears *lit.
func (l *lexer) dquoteChar(b *strings.Builder, lit *bool, dq bool) (bool, error) {
	c := l.src[l.pos]
	switch c {
	case '\\':
		if l.pos+1 < len(l.src) {
			n := l.src[l.pos+1]
			switch n {
			case '$', '`', '"', '\\':
				b.WriteByte(n)
				l.pos += 2
				return true, nil
			case '\n':
				l.pos += 2
				return true, nil
			}
		}
		b.WriteByte('\\')
		l.pos++
		return true, nil
	case '`':
		var body strings.Builder
		i := l.pos + 1
		for ; i < len(l.src) && l.src[i] != '`'; i++ {
			if l.src[i] == '\\' && i+1 < len(l.src) && strings.IndexByte("`\\$", l.src[i+1]) >= 0 {
				i++
			}
			body.WriteByte(l.src[i])
		}
		if i >= len(l.src) {
			return false, unparsable("a backquote is never closed")
		}
		l.subs = append(l.subs, body.String())
		l.pos = i + 1
		*lit = false
		return true, nil
	case '$':
		rest := l.src[l.pos:]
		switch {
		case strings.HasPrefix(rest, "$(("):
			end, err := matchParens(l.src, l.pos+1)
			if err != nil {
				return false, err
			}
			if body := l.src[l.pos+3 : end]; strings.Contains(body, "$(") || strings.Contains(body, "`") {
				return false, unparsable("command substitution inside arithmetic is not supported")
			}
			l.pos = end + 1
			*lit = false
			return true, nil
		case strings.HasPrefix(rest, "$("):
			l.pos += 2
			if err := l.sub(); err != nil {
				return false, err
			}
			*lit = false
			return true, nil
		case strings.HasPrefix(rest, "${"):
			depth := 0
			i := l.pos + 1
			for ; i < len(l.src); i++ {
				if l.src[i] == '{' {
					depth++
				} else if l.src[i] == '}' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if i >= len(l.src) {
				return false, unparsable("a \"${\" is never closed")
			}
			if body := l.src[l.pos+2 : i]; strings.Contains(body, "$(") || strings.Contains(body, "`") || strings.Contains(body, "<(") {
				return false, unparsable("command substitution inside ${…} is not supported")
			}
			l.pos = i + 1
			*lit = false
			return true, nil
		}
		if len(rest) > 1 {
			n := rest[1]
			if n == '_' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' {
				i := 2
				for i < len(rest) && (rest[i] == '_' || rest[i] >= 'a' && rest[i] <= 'z' || rest[i] >= 'A' && rest[i] <= 'Z' || rest[i] >= '0' && rest[i] <= '9') {
					i++
				}
				l.pos += i
				*lit = false
				return true, nil
			}
			if strings.IndexByte("@*#?$!-0123456789", n) >= 0 {
				l.pos += 2
				*lit = false
				return true, nil
			}
		}
		b.WriteByte('$')
		l.pos++
		return true, nil
	}
	b.WriteByte(c)
	l.pos++
	return true, nil
}

// matchParens returns the index of the ")" closing the "(" at open.
func matchParens(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, unparsable("a \"$((\" is never closed")
}

// ansiC decodes a $'…' string.
func (l *lexer) ansiC() (string, error) {
	var b strings.Builder
	i := l.pos + 2
	for i < len(l.src) {
		c := l.src[i]
		if c == '\'' {
			l.pos = i + 1
			return b.String(), nil
		}
		if c != '\\' || i+1 >= len(l.src) {
			b.WriteByte(c)
			i++
			continue
		}
		n := l.src[i+1]
		i += 2
		switch n {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[n]
			j := i
			for j < len(l.src) && j-i < max && strings.IndexByte("0123456789abcdefABCDEF", l.src[j]) >= 0 {
				j++
			}
			if j == i {
				b.WriteByte('\\')
				b.WriteByte(n)
				continue
			}
			v, _ := strconv.ParseUint(l.src[i:j], 16, 32)
			if n == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i = j
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i - 1
			for j < len(l.src) && j-(i-1) < 3 && l.src[j] >= '0' && l.src[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(l.src[i-1:j], 8, 32)
			b.WriteByte(byte(v))
			i = j
		case 'c':
			return "", unparsable("the $'\\c' escape is not supported")
		default:
			b.WriteByte(n)
		}
	}
	return "", unparsable("a $' quote is never closed")
}

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
	var cur simple
	skip := false
	flush := func() {
		if len(cur.argv) > 0 {
			out = append(out, cur)
		}
		cur, skip = simple{}, false
	}
	inTest, inArith := false, false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		// [[ … ]] and (( … )) hold expressions, not commands; their
		// substitutions were collected when lexing.
		if inTest {
			inTest = !(t.op == "" && t.w.raw == "]]")
			continue
		}
		if inArith {
			if t.op == ")" && i+1 < len(toks) && toks[i+1].op == ")" && toks[i+1].adj {
				inArith = false
				i++
			}
			continue
		}
		if t.op == "(" && len(cur.argv) == 0 && i+1 < len(toks) && toks[i+1].op == "(" && toks[i+1].adj {
			inArith = true
			i++
			continue
		}
		if t.op != "" {
			switch {
			case redirections[t.op]:
				if i+1 >= len(toks) || toks[i+1].op != "" {
					return nil, unparsable("a redirection %q has no target", t.op)
				}
				i++
			case t.op == "<<" || t.op == "<<-":
				cur.heredoc = t.hd
				i++
			case t.op == "(" && len(cur.argv) > 0:
				if i+1 < len(toks) && toks[i+1].op == ")" && len(cur.argv) == 1 {
					cur = simple{} // a function definition: its body is checked where it stands
					i++
					continue
				}
				return nil, unparsable("unexpected \"(\" after %q", cur.argv[len(cur.argv)-1].raw)
			default:
				flush()
			}
			continue
		}
		if t.fd {
			continue
		}
		w := t.w
		if len(cur.argv) == 0 {
			if skip {
				continue
			}
			if w.lit && w.raw == w.val {
				switch w.val {
				case "{", "}", "!", "then", "do", "else", "elif", "if", "while", "until", "fi", "done":
					continue
				case "for", "select":
					skip = true
					continue
				case "[[":
					inTest = true
					continue
				case "case", "coproc":
					return nil, unparsable("%q is not supported", w.val)
				case "function":
					i++ // the name; the body follows as a group
					continue
				}
			}
			if isAssignment(w.val) && !strings.HasPrefix(w.raw, "'") && !strings.HasPrefix(w.raw, "\"") {
				continue
			}
		}
		cur.argv = append(cur.argv, w)
	}
	if inArith {
		// bash reads "((" without a matching "))" as nested subshells.
		return nil, unparsable("a \"((\" has no matching \"))\"")
	}
	flush()
	return out, nil
}
