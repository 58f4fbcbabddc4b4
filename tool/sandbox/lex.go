package sandbox

import (
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
		l.blanks()
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
			hd, err := l.heredocStart(op)
			if err != nil {
				return nil, err
			}
			toks = append(toks, hd...)
			continue
		}
		toks = append(toks, token{op: op, adj: l.pos-len(op) == start})
	}
}

// blanks skips blanks and line continuations.
func (l *lexer) blanks() {
	for l.pos < len(l.src) {
		if c := l.src[l.pos]; c == ' ' || c == '\t' || c == '\r' {
			l.pos++
		} else if c == '\\' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\n' {
			l.pos += 2
		} else {
			return
		}
	}
}

// heredocStart reads the delimiter after "<<" or "<<-" and queues the
// here-document, whose body is read after the next newline.
func (l *lexer) heredocStart(op string) ([]token, error) {
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
	return []token{{op: op, hd: body}, {w: w}}, nil
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
		// An unterminated here-document runs to the end, as in bash.
		var b strings.Builder
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
				break
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
		*h.body = b.String()
		if !h.quoted {
			inner := &lexer{src: *h.body}
			for inner.pos < len(inner.src) {
				if err := inner.dquoteChar(new(strings.Builder), new(bool)); err != nil {
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
			if err := l.squoted(&b); err != nil {
				return word{}, false, err
			}
		case '"':
			if err := l.dquoted(&b, &lit); err != nil {
				return word{}, false, err
			}
		case '$', '`':
			switch {
			case strings.HasPrefix(l.src[l.pos:], "$'"):
				s, err := l.ansiC()
				if err != nil {
					return word{}, false, err
				}
				b.WriteString(s)
			case strings.HasPrefix(l.src[l.pos:], "$\""):
				l.pos++ // a locale string is a double-quoted one
			default:
				if err := l.dquoteChar(&b, &lit); err != nil {
					return word{}, false, err
				}
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
