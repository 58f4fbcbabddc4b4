package tool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// seg is one step of a JSON Pointer.
type seg struct {
	key   string
	index int // used when isKey is false
	isKey bool
}

// walker checks (and, when coerce is set, repairs) a decoded value. segs
// is the path to the value being walked, rendered only when needed.
type walker struct {
	coerce  bool
	coerced []string
	segs    []seg
}

func (w *walker) path() string {
	if len(w.segs) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, s := range w.segs {
		b.WriteByte('/')
		if s.isKey {
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s.key, "~", "~0"), "/", "~1"))
		} else {
			b.WriteString(strconv.Itoa(s.index))
		}
	}
	return b.String()
}

func (w *walker) fail(format string, args ...any) error {
	return &ValidationError{Path: w.path(), Problem: fmt.Sprintf(format, args...)}
}

func (w *walker) note() { w.coerced = append(w.coerced, w.path()) }

func (w *walker) push(s seg) { w.segs = append(w.segs, s) }
func (w *walker) pop()       { w.segs = w.segs[:len(w.segs)-1] }

// kindOf is the JSON type of a decoded value; an integral number is both
// an integer and a number.
func kindOf(v any) typeMask {
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case string:
		return tStr
	case json.Number:
		if _, ok, _ := canonicalInt(string(x)); ok {
			return tInt | tNum
		}
		return tNum
	case []any:
		return tArr
	case map[string]any:
		return tObj
	}
	return 0
}

// walk checks v against n, repairing it on the way when w.coerce is set,
// and returns the value to keep.
func (w *walker) walk(v any, n *node) (any, error) {
	if n == nil {
		return v, nil
	}
	if n.never {
		return nil, w.fail("no value is allowed here")
	}
	v, err := w.checkType(v, n)
	if err != nil {
		return nil, err
	}
	if n.enum != nil {
		if v, err = w.checkEnum(v, n); err != nil {
			return nil, err
		}
	}
	if n.hasConst && !jsonEqual(v, n.cnst) {
		return nil, w.fail("must equal %s, got %s", describeValue(n.cnst), describeValue(v))
	}
	switch x := v.(type) {
	case string:
		err = w.checkString(x, n)
	case json.Number:
		err = w.checkNumber(x, n)
	case map[string]any:
		v, err = w.walkObject(x, n)
	case []any:
		v, err = w.walkArray(x, n)
	}
	if err != nil {
		return nil, err
	}
	if n.anyOf != nil {
		if v, err = w.alternatives(v, n.anyOf, false); err != nil {
			return nil, err
		}
	}
	if n.oneOf != nil {
		if v, err = w.alternatives(v, n.oneOf, true); err != nil {
			return nil, err
		}
	}
	if n.allOf != nil {
		if v, err = w.all(v, n.allOf); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// all applies allOf: each part may coerce the value in turn; when one did,
// every part must then accept the result as it is.
func (w *walker) all(v any, parts []*node) (any, error) {
	before := len(w.coerced)
	for _, p := range parts {
		var err error
		if v, err = w.walk(v, p); err != nil {
			return nil, err
		}
	}
	if len(w.coerced) == before {
		return v, nil
	}
	for _, p := range parts {
		check := walker{segs: w.segs}
		if _, err := check.walk(v, p); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// alternatives applies anyOf (exclusive false) or oneOf (exclusive true).
// A value that fits as sent is kept; otherwise each alternative is tried
// with coercion, in order, and the first that accepts it wins.
func (w *walker) alternatives(v any, alts []*node, exclusive bool) (any, error) {
	matches, firstErr := w.matches(v, alts)
	if matches == 1 || (matches > 1 && !exclusive) {
		return v, nil
	}
	if matches > 1 {
		return nil, w.fail("matches more than one of the exclusive alternatives (oneOf)")
	}
	if w.coerce {
		for _, a := range alts {
			try := walker{coerce: true, segs: w.segs}
			fixed, err := try.walk(deepCopy(v), a)
			if err != nil || len(try.coerced) == 0 {
				continue
			}
			if exclusive {
				if n, _ := w.matches(fixed, alts); n != 1 {
					continue
				}
			}
			w.coerced = append(w.coerced, try.coerced...)
			return fixed, nil
		}
	}
	nonNull := 0
	for _, a := range alts {
		if !onlyNull(a) {
			nonNull++
		}
	}
	if nonNull == 1 && firstErr != nil {
		return nil, firstErr
	}
	return nil, w.fail("%s matches none of the allowed alternatives", describe(v))
}

// matches counts the alternatives v fits as it is, without coercion, and
// returns the first error of one that is not just null.
func (w *walker) matches(v any, alts []*node) (n int, firstErr error) {
	for _, a := range alts {
		check := walker{segs: w.segs}
		if _, err := check.walk(v, a); err == nil {
			n++
		} else if firstErr == nil && !onlyNull(a) {
			firstErr = err
		}
	}
	return n, firstErr
}

func onlyNull(n *node) bool { return n != nil && n.types == tNull }

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}
