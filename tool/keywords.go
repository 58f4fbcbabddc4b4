package tool

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"
)

// checkEnum requires v to be one of n's enum values. An untyped enum of
// numbers or booleans also accepts one sent as a string.
func (w *walker) checkEnum(v any, n *node) (any, error) {
	for _, e := range n.enum {
		if jsonEqual(v, e) {
			return v, nil
		}
	}
	if x, ok := v.(string); ok && w.coerce && n.types == 0 {
		if e, ok := enumFromString(x, n.enum); ok {
			w.note()
			return e, nil
		}
	}
	return nil, w.fail("%s is not one of the allowed values %s", describeValue(v), listValues(n.enum))
}

func (w *walker) checkString(s string, n *node) error {
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(s)
		if n.minLen >= 0 && l < n.minLen {
			return w.fail("must be at least %d characters long, got %d", n.minLen, l)
		}
		if n.maxLen >= 0 && l > n.maxLen {
			return w.fail("must be at most %d characters long, got %d", n.maxLen, l)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return w.fail("%s does not match the pattern %q", describeValue(s), n.patternText)
	}
	return nil
}

func (w *walker) checkNumber(num json.Number, n *node) error {
	if n.min == nil && n.max == nil && n.exMin == nil && n.exMax == nil {
		return nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return w.fail("%s is not a number", num)
	}
	if n.min != nil && f < *n.min {
		return w.fail("must be at least %s, got %s", fmtFloat(*n.min), num)
	}
	if n.max != nil && f > *n.max {
		return w.fail("must be at most %s, got %s", fmtFloat(*n.max), num)
	}
	if n.exMin != nil && f <= *n.exMin {
		return w.fail("must be greater than %s, got %s", fmtFloat(*n.exMin), num)
	}
	if n.exMax != nil && f >= *n.exMax {
		return w.fail("must be less than %s, got %s", fmtFloat(*n.exMax), num)
	}
	return nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (w *walker) walkObject(obj map[string]any, n *node) (any, error) {
	for _, name := range n.required {
		if _, ok := obj[name]; !ok {
			return nil, w.fail("missing required property %q", name)
		}
	}
	matched := 0
	for i := range n.props {
		pr := &n.props[i]
		val, ok := obj[pr.name]
		if !ok {
			continue
		}
		matched++
		w.push(seg{key: pr.name, isKey: true})
		if val == nil && !pr.required && pr.node != nil && pr.node.types != 0 && pr.node.types&tNull == 0 && w.coerce {
			delete(obj, pr.name)
			matched--
			w.note()
			w.pop()
			continue
		}
		fixed, err := w.walk(val, pr.node)
		w.pop()
		if err != nil {
			return nil, err
		}
		if w.coerce {
			obj[pr.name] = fixed
		}
	}
	if matched < len(obj) && n.additional != nil {
		var extra []string
		for name := range obj {
			if _, known := n.propIndex[name]; !known {
				extra = append(extra, name)
			}
		}
		slices.Sort(extra)
		for _, name := range extra {
			if n.additional.never {
				return nil, w.fail("unexpected property %q", name)
			}
			w.push(seg{key: name, isKey: true})
			fixed, err := w.walk(obj[name], n.additional)
			w.pop()
			if err != nil {
				return nil, err
			}
			if w.coerce {
				obj[name] = fixed
			}
		}
	}
	if len(obj) < n.minProps {
		return nil, w.fail("must have at least %d properties, got %d", n.minProps, len(obj))
	}
	if n.maxProps >= 0 && len(obj) > n.maxProps {
		return nil, w.fail("must have at most %d properties, got %d", n.maxProps, len(obj))
	}
	return obj, nil
}

func (w *walker) walkArray(arr []any, n *node) (any, error) {
	if len(arr) < n.minItems {
		return nil, w.fail("must have at least %d items, got %d", n.minItems, len(arr))
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		return nil, w.fail("must have at most %d items, got %d", n.maxItems, len(arr))
	}
	if n.items != nil {
		for i, it := range arr {
			w.push(seg{index: i})
			fixed, err := w.walk(it, n.items)
			w.pop()
			if err != nil {
				return nil, err
			}
			if w.coerce {
				arr[i] = fixed
			}
		}
	}
	if n.unique {
		for i := range arr {
			for j := i + 1; j < len(arr); j++ {
				if jsonEqual(arr[i], arr[j]) {
					return nil, w.fail("items %d and %d are equal; items must be unique", i, j)
				}
			}
		}
	}
	return arr, nil
}
