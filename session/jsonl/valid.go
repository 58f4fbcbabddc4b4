package jsonl

import "encoding/json"

// validJSON reports whether b is one JSON value, exactly as json.Valid
// does, but at a few times its speed on the long strings that make up
// most of a log: the open scan checks every line with it. Nesting deeper
// than 64 is left to json.Valid.
func validJSON(b []byte) bool {
	end, ok := valueEnd(b, skipSpace(b, 0))
	if end < 0 {
		return json.Valid(b)
	}
	return ok && skipSpace(b, end) == len(b)
}

// valueEnd checks the JSON value that starts at b[i] and returns the
// index just after it. At nesting deeper than 64 it gives up with -1.
func valueEnd(b []byte, i int) (int, bool) {
	var objs uint64 // bit d is set if the container at depth d is an object
	depth := 0
	for {
		// A value starts at i.
		if i >= len(b) {
			return i, false
		}
		ok := true
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == 64 {
				return -1, false
			}
			obj := c == '{'
			if obj {
				objs |= 1 << depth
			} else {
				objs &^= 1 << depth
			}
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && (b[i] == '}' && obj || b[i] == ']' && !obj) {
				depth--
				i++
				break
			}
			if obj {
				if i, ok = objectKey(b, i); !ok {
					return i, false
				}
			}
			continue
		case c == '"':
			i, ok = stringEnd(b, i)
		case c == 't':
			i, ok = literal(b, i, "true")
		case c == 'f':
			i, ok = literal(b, i, "false")
		case c == 'n':
			i, ok = literal(b, i, "null")
		default:
			i, ok = numberEnd(b, i)
		}
		if !ok {
			return i, false
		}
		// After a value: close containers, or go on to the next element.
		for {
			if depth == 0 {
				return i, true
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			obj := objs>>(depth-1)&1 == 1
			if c := b[i]; c == '}' && obj || c == ']' && !obj {
				depth--
				i++
				continue
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipSpace(b, i+1)
			if obj {
				if i, ok = objectKey(b, i); !ok {
					return i, false
				}
			}
			break
		}
	}
}

// objectKey reads `"key" :` and the space after it.
func objectKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := stringEnd(b, i)
	if !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainByte marks the bytes a string holds as they are.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// stringEnd returns the index after the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		if plainByte[b[i]] {
			continue
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		default: // a control byte
			return i, false
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// numberEnd returns the index after the number starting at b[i].
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
