package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ValidationError is arguments that do not fit a tool's schema. Its text is
// what the model sees, so it says what is wrong and where.
type ValidationError struct {
	// Path is a JSON Pointer to the offending value; "/" is the whole
	// argument object.
	Path string
	// Problem says what is wrong, e.g. `missing required property "path"`.
	Problem string
}

// Error returns "Validation error: <problem>, at <path>".
func (e *ValidationError) Error() string {
	return "Validation error: " + e.Problem + ", at " + e.Path
}

// Validator checks a tool's arguments against its JSON Schema and repairs
// the model's usual, harmless mistakes on the way. It is compiled once per
// schema and is safe for concurrent use.
//
// Coercions, each reported by the JSON Pointer of the value it changed:
//
//   - a number or boolean sent as a string ("5" → 5, "true" → true);
//   - an integer written in a non-canonical form (5.0, 1e2) where only
//     integers are allowed;
//   - a number or boolean where a string is expected (5 → "5");
//   - an object or array sent as a JSON string;
//   - a single value where an array is expected (wrapped in an array);
//   - null for an optional property that does not allow null (dropped).
//
// Nothing lossy is coerced: "5.5" never becomes an integer. Empty arguments
// and a bare null mean {}.
//
// Most schemas are checked entirely by rein's own walk. Schemas using
// keywords the walk does not interpret (not, if/then/else,
// patternProperties, prefixItems, multipleOf, remote $ref, …) are also
// checked by github.com/google/jsonschema-go after coercion, so nothing
// the schema forbids is accepted.
type Validator struct {
	root *node
	lib  *jsonschema.Resolved // non-nil when the walk alone is not enough
}

// validators caches compiled validators by schema text; schemas are few
// and reused for every call of a tool.
var validators struct {
	sync.Mutex
	m map[string]*Validator
}

const maxCachedValidators = 1024

// NewValidator compiles schema, which must be a JSON Schema (draft 2020-12
// or draft-07) for the arguments object. Compiled validators are cached by
// schema text, so calling NewValidator again for the same schema is cheap.
func NewValidator(schema json.RawMessage) (*Validator, error) {
	validators.Lock()
	v, ok := validators.m[string(schema)] // no copy of schema for a lookup
	validators.Unlock()
	if ok {
		return v, nil
	}
	key := string(schema)
	v, err := compileValidator(schema)
	if err != nil {
		return nil, err
	}
	validators.Lock()
	if validators.m == nil || len(validators.m) >= maxCachedValidators {
		validators.m = make(map[string]*Validator)
	}
	validators.m[key] = v
	validators.Unlock()
	return v, nil
}

func compileValidator(schema json.RawMessage) (*Validator, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("tool: compile schema: %w; a tool's schema must be a JSON Schema object", err)
	}
	recordOrder(bytes.TrimSpace(schema), &s, 0)
	c := &compiler{root: &s, memo: make(map[*jsonschema.Schema]*node)}
	root, err := c.compile(&s)
	if err != nil {
		return nil, fmt.Errorf("tool: compile schema: %w", err)
	}
	v := &Validator{root: root}
	if c.needsLib {
		rs, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("tool: compile schema: %w; only local $ref targets are supported", err)
		}
		v.lib = rs
	}
	return v, nil
}

// Validate checks args and returns them fixed: unchanged (the same slice)
// when nothing needed coercion, re-encoded otherwise; empty arguments or
// null come back as {}. coerced lists the
// JSON Pointers of the values that were coerced, in the order the schema
// declares its properties. A *ValidationError says what the model got wrong.
func (v *Validator) Validate(args json.RawMessage) (fixed json.RawMessage, coerced []string, err error) {
	trimmed := bytes.Trim(args, " \t\r\n")
	if len(trimmed) == 0 || string(trimmed) == "null" {
		args, trimmed = json.RawMessage("{}"), json.RawMessage("{}")
	}
	if string(trimmed) == "{}" && v.root.acceptsEmptyObject() && v.lib == nil {
		return args, nil, nil
	}
	val, perr := parseJSON(trimmed)
	if perr != nil {
		return nil, nil, &ValidationError{Path: "/", Problem: "arguments are not valid JSON (" + perr.Error() + ")"}
	}
	var stack [8]seg
	w := walker{coerce: true, segs: stack[:0]}
	val, err = w.walk(val, v.root)
	if err != nil {
		return nil, nil, err
	}
	if len(w.coerced) > 0 {
		if args, err = encodeJSON(val); err != nil {
			return nil, nil, &ValidationError{Path: "/", Problem: err.Error()}
		}
	}
	if v.lib != nil {
		var plain any
		if err := json.Unmarshal(args, &plain); err != nil {
			return nil, nil, &ValidationError{Path: "/", Problem: "arguments are not valid JSON (" + err.Error() + ")"}
		}
		if err := v.lib.Validate(plain); err != nil {
			return nil, nil, libError(err)
		}
	}
	return args, w.coerced, nil
}

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

func encodeJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// typeMask is a set of JSON types.
type typeMask uint8

const (
	tNull typeMask = 1 << iota
	tBool
	tInt
	tNum
	tStr
	tArr
	tObj
)

var typeNames = []struct {
	m    typeMask
	name string
}{{tObj, "object"}, {tArr, "array"}, {tStr, "string"}, {tInt, "integer"}, {tNum, "number"}, {tBool, "boolean"}, {tNull, "null"}}

func parseType(name string) (typeMask, error) {
	for _, t := range typeNames {
		if t.name == name {
			return t.m, nil
		}
	}
	return 0, fmt.Errorf("unknown type %q", name)
}

func (m typeMask) String() string {
	var names []string
	for _, t := range typeNames {
		if m&t.m != 0 && !(t.m == tInt && m&tNum != 0) {
			names = append(names, t.name)
		}
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// node is one compiled schema.
type node struct {
	never bool     // the false schema
	types typeMask // 0: any type

	enum     []any
	hasConst bool
	cnst     any

	minLen, maxLen int // -1: none
	pattern        *regexp.Regexp
	patternText    string

	min, max, exMin, exMax *float64

	props      []prop
	propIndex  map[string]int
	required   []string
	additional *node // nil: any property allowed
	minProps   int
	maxProps   int // -1: none

	items    *node
	minItems int
	maxItems int // -1: none
	unique   bool

	anyOf, oneOf, allOf []*node
}

type prop struct {
	name     string
	node     *node
	required bool
}

type compiler struct {
	root     *jsonschema.Schema
	memo     map[*jsonschema.Schema]*node
	needsLib bool
}

func isFalseSchema(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.DeepEqual(*s.Not, jsonschema.Schema{}) &&
		reflect.DeepEqual(*s, jsonschema.Schema{Not: s.Not})
}

// onlyRef reports whether s is a $ref with nothing beside it but
// annotations.
func onlyRef(s *jsonschema.Schema) bool {
	c := *s
	c.Ref, c.Title, c.Description, c.Default, c.Comment, c.Examples, c.Deprecated, c.ReadOnly, c.WriteOnly, c.Schema, c.ID, c.Defs, c.Definitions, c.Extra = "", "", "", nil, "", nil, false, false, false, "", "", nil, nil, nil
	return reflect.DeepEqual(c, jsonschema.Schema{})
}

// local resolves a same-document $ref such as "#/$defs/Item".
func (c *compiler) local(ref string) *jsonschema.Schema {
	if ref == "#" {
		return c.root
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 {
		return nil
	}
	name := strings.ReplaceAll(strings.ReplaceAll(parts[1], "~1", "/"), "~0", "~")
	switch parts[0] {
	case "$defs":
		return c.root.Defs[name]
	case "definitions":
		return c.root.Definitions[name]
	}
	return nil
}

func (c *compiler) compile(s *jsonschema.Schema) (*node, error) {
	if s == nil {
		return nil, nil
	}
	if n, ok := c.memo[s]; ok {
		return n, nil
	}
	if s.Ref != "" && onlyRef(s) {
		if target := c.local(s.Ref); target != nil && target != s {
			n, err := c.compile(target)
			c.memo[s] = n
			return n, err
		}
	}
	n := &node{minLen: -1, maxLen: -1, maxProps: -1, maxItems: -1}
	c.memo[s] = n
	if isFalseSchema(s) {
		n.never = true
		return n, nil
	}
	if s.Ref != "" || s.DynamicRef != "" || s.Not != nil || s.If != nil ||
		s.Then != nil || s.Else != nil || s.DependentSchemas != nil || s.DependentRequired != nil ||
		s.DependencySchemas != nil || s.DependencyStrings != nil || s.PropertyNames != nil ||
		s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil || s.AdditionalItems != nil ||
		s.Contains != nil || s.MinContains != nil || s.MaxContains != nil || s.MultipleOf != nil {
		c.needsLib = true
	}
	if s.Type != "" {
		m, err := parseType(s.Type)
		if err != nil {
			return nil, err
		}
		n.types = m
	}
	for _, t := range s.Types {
		m, err := parseType(t)
		if err != nil {
			return nil, err
		}
		n.types |= m
	}
	if n.types&tNum != 0 {
		n.types |= tInt
	}
	for _, e := range s.Enum {
		v, err := renumber(e)
		if err != nil {
			return nil, fmt.Errorf("enum: %w", err)
		}
		n.enum = append(n.enum, v)
	}
	if s.Enum != nil && len(s.Enum) == 0 {
		n.never = true
	}
	if s.Const != nil {
		v, err := renumber(*s.Const)
		if err != nil {
			return nil, fmt.Errorf("const: %w", err)
		}
		n.hasConst, n.cnst = true, v
	}
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", s.Pattern, err)
		}
		n.pattern, n.patternText = re, s.Pattern
	}
	n.min, n.max, n.exMin, n.exMax = s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum

	// Objects. Properties are kept in a stable order so errors and
	// coercions are reported deterministically.
	names := make([]string, 0, len(s.Properties))
	for _, name := range s.PropertyOrder {
		if _, ok := s.Properties[name]; ok {
			names = append(names, name)
		}
	}
	if len(names) < len(s.Properties) {
		var rest []string
		for name := range s.Properties {
			if !slices.Contains(names, name) {
				rest = append(rest, name)
			}
		}
		slices.Sort(rest)
		names = append(names, rest...)
	}
	if len(names) > 0 {
		n.propIndex = make(map[string]int, len(names))
	}
	for _, name := range names {
		pn, err := c.compile(s.Properties[name])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		n.propIndex[name] = len(n.props)
		n.props = append(n.props, prop{name: name, node: pn, required: slices.Contains(s.Required, name)})
	}
	n.required = s.Required
	if s.PatternProperties != nil {
		// additionalProperties then applies only to names no pattern
		// matches; leave the whole object to the full validator.
		c.needsLib = true
	} else if s.AdditionalProperties != nil {
		ap, err := c.compile(s.AdditionalProperties)
		if err != nil {
			return nil, fmt.Errorf("additionalProperties: %w", err)
		}
		n.additional = ap
	}
	if s.MinProperties != nil {
		n.minProps = *s.MinProperties
	}
	if s.MaxProperties != nil {
		n.maxProps = *s.MaxProperties
	}

	// Arrays.
	if s.PrefixItems != nil || s.ItemsArray != nil {
		c.needsLib = true
	} else if s.Items != nil {
		it, err := c.compile(s.Items)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		n.items = it
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	n.unique = s.UniqueItems

	for _, b := range s.AnyOf {
		bn, err := c.compile(b)
		if err != nil {
			return nil, fmt.Errorf("anyOf: %w", err)
		}
		n.anyOf = append(n.anyOf, bn)
	}
	for _, b := range s.OneOf {
		bn, err := c.compile(b)
		if err != nil {
			return nil, fmt.Errorf("oneOf: %w", err)
		}
		n.oneOf = append(n.oneOf, bn)
	}
	for _, b := range s.AllOf {
		bn, err := c.compile(b)
		if err != nil {
			return nil, fmt.Errorf("allOf: %w", err)
		}
		n.allOf = append(n.allOf, bn)
	}
	return n, nil
}

// renumber re-decodes a schema literal so its numbers are json.Numbers,
// like the arguments they are compared with.
func renumber(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseJSON(b)
}

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

func (w *walker) walk(v any, n *node) (any, error) {
	if n == nil {
		return v, nil
	}
	if n.never {
		return nil, w.fail("no value is allowed here")
	}
	if n.types != 0 {
		k := kindOf(v)
		if k&n.types == 0 {
			c, ok := w.coerceValue(v, n)
			if !ok {
				return nil, w.fail("expected %s, got %s", n.types, describe(v))
			}
			w.note()
			v = c
		} else if num, isNum := v.(json.Number); isNum && n.types&tNum == 0 && n.types&tInt != 0 {
			// Only integers are allowed: write them canonically so they
			// decode into Go integer fields.
			canon, _, _ := canonicalInt(string(num))
			if canon != string(num) && w.coerce {
				w.note()
				v = json.Number(canon)
			}
		}
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if jsonEqual(v, e) {
				found = true
				break
			}
		}
		if !found && w.coerce && n.types == 0 {
			// An untyped enum of numbers or booleans, sent as a string.
			if x, ok := v.(string); ok {
				var lit any
				switch {
				case isJSONNumber(x):
					lit = json.Number(x)
				case x == "true" || x == "false":
					lit = x == "true"
				}
				for _, e := range n.enum {
					if lit != nil && jsonEqual(lit, e) {
						v, found = e, true
						w.note()
						break
					}
				}
			}
		}
		if !found {
			return nil, w.fail("%s is not one of the allowed values %s", describeValue(v), listValues(n.enum))
		}
	}
	if n.hasConst && !jsonEqual(v, n.cnst) {
		return nil, w.fail("must equal %s, got %s", describeValue(n.cnst), describeValue(v))
	}
	var err error
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

// acceptsEmptyObject reports whether {} passes n without coercion.
func (n *node) acceptsEmptyObject() bool {
	return n != nil && !n.never && (n.types == 0 || n.types&tObj != 0) && len(n.required) == 0 &&
		n.minProps == 0 && n.enum == nil && !n.hasConst && n.anyOf == nil && n.oneOf == nil
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

// alternatives applies anyOf (exclusive false) or oneOf (exclusive true).
// A value that fits as sent is kept; otherwise each alternative is tried
// with coercion, in order, and the first that accepts it wins.
func (w *walker) alternatives(v any, alts []*node, exclusive bool) (any, error) {
	matches := 0
	var firstErr error
	for _, a := range alts {
		check := walker{segs: w.segs}
		if _, err := check.walk(v, a); err == nil {
			matches++
		} else if firstErr == nil && !onlyNull(a) {
			firstErr = err
		}
	}
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
				n := 0
				for _, b := range alts {
					check := walker{segs: w.segs}
					if _, err := check.walk(fixed, b); err == nil {
						n++
					}
				}
				if n != 1 {
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
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
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
