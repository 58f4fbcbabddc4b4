package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

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
	if err := compileScalar(n, s); err != nil {
		return nil, err
	}
	if err := c.compileObject(n, s); err != nil {
		return nil, err
	}
	if err := c.compileArray(n, s); err != nil {
		return nil, err
	}
	var err error
	if n.anyOf, err = c.compileList("anyOf", s.AnyOf); err != nil {
		return nil, err
	}
	if n.oneOf, err = c.compileList("oneOf", s.OneOf); err != nil {
		return nil, err
	}
	if n.allOf, err = c.compileList("allOf", s.AllOf); err != nil {
		return nil, err
	}
	return n, nil
}

// compileScalar reads the keywords that do not hold subschemas: types,
// enum and const, and the string and number bounds.
func compileScalar(n *node, s *jsonschema.Schema) error {
	types := s.Types
	if s.Type != "" {
		types = append([]string{s.Type}, s.Types...)
	}
	for _, t := range types {
		m, err := parseType(t)
		if err != nil {
			return err
		}
		n.types |= m
	}
	if n.types&tNum != 0 {
		n.types |= tInt
	}
	for _, e := range s.Enum {
		v, err := renumber(e)
		if err != nil {
			return fmt.Errorf("enum: %w", err)
		}
		n.enum = append(n.enum, v)
	}
	if s.Enum != nil && len(s.Enum) == 0 {
		n.never = true
	}
	if s.Const != nil {
		v, err := renumber(*s.Const)
		if err != nil {
			return fmt.Errorf("const: %w", err)
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
			return fmt.Errorf("pattern %q: %w", s.Pattern, err)
		}
		n.pattern, n.patternText = re, s.Pattern
	}
	n.min, n.max, n.exMin, n.exMax = s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum
	return nil
}

// compileObject reads the object keywords. Properties are kept in a
// stable order so errors and coercions are reported deterministically.
func (c *compiler) compileObject(n *node, s *jsonschema.Schema) error {
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
			return fmt.Errorf("property %q: %w", name, err)
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
		var err error
		if n.additional, err = c.compileAt("additionalProperties", s.AdditionalProperties); err != nil {
			return err
		}
	}
	if s.MinProperties != nil {
		n.minProps = *s.MinProperties
	}
	if s.MaxProperties != nil {
		n.maxProps = *s.MaxProperties
	}
	return nil
}

// compileArray reads the array keywords; tuple forms are left to the
// full validator.
func (c *compiler) compileArray(n *node, s *jsonschema.Schema) error {
	if s.PrefixItems != nil || s.ItemsArray != nil {
		c.needsLib = true
	} else if s.Items != nil {
		var err error
		if n.items, err = c.compileAt("items", s.Items); err != nil {
			return err
		}
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	n.unique = s.UniqueItems
	return nil
}

// compileList compiles the branches of anyOf, oneOf or allOf; none is nil.
func (c *compiler) compileList(keyword string, ss []*jsonschema.Schema) ([]*node, error) {
	var out []*node
	for _, b := range ss {
		bn, err := c.compileAt(keyword, b)
		if err != nil {
			return nil, err
		}
		out = append(out, bn)
	}
	return out, nil
}

// compileAt compiles a subschema, naming the keyword it stands under in
// an error.
func (c *compiler) compileAt(keyword string, s *jsonschema.Schema) (*node, error) {
	n, err := c.compile(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyword, err)
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

// acceptsEmptyObject reports whether {} passes n without coercion.
func (n *node) acceptsEmptyObject() bool {
	return n != nil && !n.never && (n.types == 0 || n.types&tObj != 0) && len(n.required) == 0 &&
		n.minProps == 0 && n.enum == nil && !n.hasConst && n.anyOf == nil && n.oneOf == nil
}
