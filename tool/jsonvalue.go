package tool

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		ci, okx, _ := canonicalInt(string(x))
		cj, oky, _ := canonicalInt(string(y))
		if okx && oky {
			return ci == cj
		}
		fx, errx := strconv.ParseFloat(string(x), 64)
		fy, erry := strconv.ParseFloat(string(y), 64)
		return errx == nil && erry == nil && fx == fy
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !jsonEqual(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// isJSONNumber reports whether s is exactly a JSON number literal.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		start := i + 1
		if i = skipDigits(s, start); i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		if i = skipDigits(s, i); i == start {
			return false
		}
	}
	return i == len(s)
}

// skipDigits returns the index of the first non-digit at or after i.
func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// maxIntDigits bounds the integers canonicalInt writes out, so "1e999999"
// cannot make rein allocate a megabyte.
const maxIntDigits = 400

// canonicalInt returns the plain decimal form of the JSON number s if s is
// an integer (5.0 and 1e2 are). tooBig is set for integers too long to
// write out.
func canonicalInt(s string) (canon string, ok, tooBig bool) {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			simple = false
			break
		}
	}
	if simple {
		if s == "-0" {
			return "0", true, false
		}
		return s, true, false
	}
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	e := 0
	if exp != "" {
		x, err := strconv.Atoi(exp)
		if err != nil || x > 1<<20 || x < -(1<<20) {
			return "", false, err == nil || errors.Is(err, strconv.ErrRange)
		}
		e = x
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	e -= len(frac)
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		e++
	}
	if digits == "" {
		return "0", true, false
	}
	if e < 0 {
		return "", false, false
	}
	if len(digits)+e > maxIntDigits {
		return "", false, true
	}
	out := digits + strings.Repeat("0", e)
	if neg {
		out = "-" + out
	}
	return out, true, false
}
