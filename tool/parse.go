package tool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// parseJSON decodes one JSON value into the shapes encoding/json gives
// with UseNumber (map[string]any, []any, string, json.Number, bool, nil).
// It copies the input once and slices strings and numbers out of that
// copy, so a flat object costs a handful of allocations.
func parseJSON(b []byte) (any, error) {
	p := parser{s: string(b)}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected data after the value at byte %d", p.i)
	}
	return v, nil
}

type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) unexpected(what string) error {
	if p.i >= len(p.s) {
		return fmt.Errorf("unexpected end of input, %s", what)
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.i:])
	return fmt.Errorf("invalid character %q at byte %d, %s", r, p.i, what)
}

func (p *parser) value() (any, error) {
	if p.i >= len(p.s) {
		return nil, p.unexpected("expecting a value")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.unexpected("expecting a value")
}

func (p *parser) literal(lit string) error {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return nil
	}
	for j := 0; j < len(lit) && p.i < len(p.s) && p.s[p.i] == lit[j]; j++ {
		p.i++
	}
	return p.unexpected("in literal " + lit)
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("nesting deeper than %d levels", maxDepth)
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.i++ // {
	m := make(map[string]any)
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.unexpected("expecting a property name")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.unexpected("expecting ':' after a property name")
		}
		p.i++
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.space()
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		return nil, p.unexpected("expecting ',' or '}' in an object")
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.space()
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		return nil, p.unexpected("expecting ',' or ']' in an array")
	}
}

// str reads a string. Plain ASCII and valid UTF-8 without escapes is
// sliced from the input; anything else is decoded by encoding/json so
// escapes and invalid UTF-8 come out exactly as it would make them.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // "
	plain := true
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			if plain {
				return p.s[start+1 : p.i-1], nil
			}
			var out string
			if err := json.Unmarshal([]byte(p.s[start:p.i]), &out); err != nil {
				p.i = start
				return "", p.unexpected("in a string: " + err.Error())
			}
			return out, nil
		case c == '\\':
			plain = false
			p.i += 2
		case c < 0x20:
			return "", p.unexpected("in a string (control characters must be escaped)")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			p.i += size
		default:
			p.i++
		}
	}
	return "", fmt.Errorf("unexpected end of input in a string starting at byte %d", start)
}

func (p *parser) number() (any, error) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	n := p.s[start:p.i]
	if !isJSONNumber(n) {
		p.i = start
		return nil, p.unexpected("in the number " + strconv.Quote(n))
	}
	return json.Number(n), nil
}
