package tool

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	ratInt     = regexp.MustCompile(`\b(-?\d+)/1\b`)
	zeroFrac   = regexp.MustCompile(`\b(\d+)\.0+\b`)
	schemaStep = regexp.MustCompile(`^validating ([^:]*): `)
)

// libError rewrites an error of jsonschema-go, which names schema
// locations, into the model-facing form naming the value's location as
// well as it can be known.
func libError(err error) *ValidationError {
	msg := err.Error()
	where := ""
	for {
		m := schemaStep.FindStringSubmatch(msg)
		if m == nil {
			break
		}
		if m[1] != "root" {
			where = m[1]
		}
		msg = msg[len(m[0]):]
	}
	path := ""
	segs := strings.Split(strings.TrimPrefix(where, "/"), "/")
	for i := 0; i < len(segs); i++ {
		if segs[i] != "properties" || i+1 >= len(segs) {
			if segs[i] == "items" || segs[i] == "prefixItems" || segs[i] == "additionalProperties" || segs[i] == "patternProperties" {
				break // the failing index or name is not known
			}
			continue
		}
		path += "/" + segs[i+1]
		i++
	}
	if path == "" {
		path = "/"
	}
	if strings.HasPrefix(msg, "not: ") {
		msg = "the value matches a schema it must not match"
	}
	msg = zeroFrac.ReplaceAllString(ratInt.ReplaceAllString(msg, "$1"), "$1")
	return &ValidationError{Path: path, Problem: msg}
}

// describe names a value's type and, for scalars, shows it briefly.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case string:
		return "string " + quoteShort(x)
	case json.Number:
		return "number " + shorten(string(x))
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// describeValue shows a value briefly as JSON.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		return quoteShort(x)
	case json.Number:
		return shorten(string(x))
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return describe(v)
	}
	return shorten(string(b))
}

func listValues(vs []any) string {
	const most = 10
	var parts []string
	for i, v := range vs {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(vs)-most))
			break
		}
		parts = append(parts, describeValue(v))
	}
	return strings.Join(parts, ", ")
}

const shortLimit = 40

func quoteShort(s string) string {
	if utf8.RuneCountInString(s) <= shortLimit {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:shortLimit])) + "…"
}

func shorten(s string) string {
	if len(s) <= shortLimit {
		return s
	}
	cut := shortLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
