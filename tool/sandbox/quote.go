package sandbox

import (
	"strconv"
	"strings"
)

// squoted consumes the single-quoted string at pos.
func (l *lexer) squoted(b *strings.Builder) error {
	end := strings.IndexByte(l.src[l.pos+1:], '\'')
	if end < 0 {
		return unparsable("a single quote is never closed")
	}
	b.WriteString(l.src[l.pos+1 : l.pos+1+end])
	l.pos += end + 2
	return nil
}

// dquoted consumes the double-quoted string at pos.
func (l *lexer) dquoted(b *strings.Builder, lit *bool) error {
	l.pos++
	for l.pos < len(l.src) {
		if l.src[l.pos] == '"' {
			l.pos++
			return nil
		}
		if err := l.dquoteChar(b, lit); err != nil {
			return err
		}
	}
	return unparsable("a double quote is never closed")
}

// dquoteChar consumes one unit at pos: a character inside double quotes,
// or a "$"/"`" expansion inside or outside them. Substitution bodies go
// to subs; any expansion clears *lit.
func (l *lexer) dquoteChar(b *strings.Builder, lit *bool) error {
	switch l.src[l.pos] {
	case '\\':
		if l.pos+1 < len(l.src) {
			switch n := l.src[l.pos+1]; n {
			case '$', '`', '"', '\\':
				b.WriteByte(n)
				l.pos += 2
				return nil
			case '\n':
				l.pos += 2
				return nil
			}
		}
	case '`':
		*lit = false
		return l.backquote()
	case '$':
		if expanded, err := l.dollar(); expanded || err != nil {
			*lit = false
			return err
		}
	}
	b.WriteByte(l.src[l.pos])
	l.pos++
	return nil
}

// backquote records the body of the `…` substitution at pos.
func (l *lexer) backquote() error {
	var body strings.Builder
	i := l.pos + 1
	for ; i < len(l.src) && l.src[i] != '`'; i++ {
		if l.src[i] == '\\' && i+1 < len(l.src) && strings.IndexByte("`\\$", l.src[i+1]) >= 0 {
			i++
		}
		body.WriteByte(l.src[i])
	}
	if i >= len(l.src) {
		return unparsable("a backquote is never closed")
	}
	l.subs = append(l.subs, body.String())
	l.pos = i + 1
	return nil
}

// dollar consumes the expansion at a "$": arithmetic, a command
// substitution (recorded), ${…} or a parameter. expanded is false, and
// nothing consumed, for a "$" that starts none of them: it is a literal.
func (l *lexer) dollar() (expanded bool, err error) {
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
		return true, nil
	case strings.HasPrefix(rest, "$("):
		l.pos += 2
		return true, l.sub()
	case strings.HasPrefix(rest, "${"):
		return true, l.braceParam()
	}
	if len(rest) > 1 {
		n := rest[1]
		if n == '_' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' {
			i := 2
			for i < len(rest) && (rest[i] == '_' || rest[i] >= 'a' && rest[i] <= 'z' || rest[i] >= 'A' && rest[i] <= 'Z' || rest[i] >= '0' && rest[i] <= '9') {
				i++
			}
			l.pos += i
			return true, nil
		}
		if strings.IndexByte("@*#?$!-0123456789", n) >= 0 {
			l.pos += 2
			return true, nil
		}
	}
	return false, nil
}

// braceParam consumes the ${…} at pos.
func (l *lexer) braceParam() error {
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
		return unparsable("a \"${\" is never closed")
	}
	if body := l.src[l.pos+2 : i]; strings.Contains(body, "$(") || strings.Contains(body, "`") || strings.Contains(body, "<(") {
		return unparsable("command substitution inside ${…} is not supported")
	}
	l.pos = i + 1
	return nil
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
