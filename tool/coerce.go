package tool

import (
	"encoding/json"
	"strconv"
	"strings"
)

// checkType checks v against n's types, coercing it when it has none of
// them, and writes an integer canonically where only integers are
// allowed, so it decodes into a Go integer field.
func (w *walker) checkType(v any, n *node) (any, error) {
	if n.types == 0 {
		return v, nil
	}
	if kindOf(v)&n.types == 0 {
		c, ok := w.coerceValue(v, n)
		if !ok {
			return nil, w.fail("expected %s, got %s", n.types, describe(v))
		}
		w.note()
		return c, nil
	}
	if num, isNum := v.(json.Number); isNum && n.types&tNum == 0 && n.types&tInt != 0 {
		canon, _, _ := canonicalInt(string(num))
		if canon != string(num) && w.coerce {
			w.note()
			return json.Number(canon), nil
		}
	}
	return v, nil
}

// coerceValue repairs v, which has none of n's types, if that loses
// nothing. The result is walked again by the caller's checks.
func (w *walker) coerceValue(v any, n *node) (any, bool) {
	if !w.coerce {
		return nil, false
	}
	switch x := v.(type) {
	case string:
		if n.types&(tInt|tNum) != 0 && isJSONNumber(x) {
			if n.types&tNum != 0 {
				return json.Number(x), true
			}
			if canon, ok, _ := canonicalInt(x); ok {
				return json.Number(canon), true
			}
		}
		if n.types&tBool != 0 {
			switch {
			case strings.EqualFold(x, "true"):
				return true, true
			case strings.EqualFold(x, "false"):
				return false, true
			}
		}
		t := strings.TrimSpace(x)
		if n.types&tObj != 0 && strings.HasPrefix(t, "{") {
			if inner, err := parseJSON([]byte(t)); err == nil {
				return inner, true
			}
		}
		if n.types&tArr != 0 && strings.HasPrefix(t, "[") {
			if inner, err := parseJSON([]byte(t)); err == nil {
				return inner, true
			}
		}
		if n.types&tArr != 0 {
			return []any{x}, true
		}
	case json.Number:
		if n.types&tStr != 0 {
			return string(x), true
		}
		if n.types&tArr != 0 {
			return []any{x}, true
		}
	case bool:
		if n.types&tStr != 0 {
			return strconv.FormatBool(x), true
		}
		if n.types&tArr != 0 {
			return []any{x}, true
		}
	case map[string]any:
		if n.types&tArr != 0 {
			return []any{x}, true
		}
	}
	return nil, false
}

// enumFromString finds the member of an untyped enum that a number or
// boolean sent as a string stands for.
func enumFromString(x string, enum []any) (any, bool) {
	var lit any
	switch {
	case isJSONNumber(x):
		lit = json.Number(x)
	case x == "true" || x == "false":
		lit = x == "true"
	default:
		return nil, false
	}
	for _, e := range enum {
		if jsonEqual(lit, e) {
			return e, true
		}
	}
	return nil, false
}
