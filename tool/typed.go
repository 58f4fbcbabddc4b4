package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Options configures a tool made by New. A nil *Options is the zero value.
type Options struct {
	// Annotations say what the tool does to the world; nil leaves the tool
	// unannotated, which approval and dry-run treat with most caution.
	Annotations *Annotations
	// Exclusive makes the tool run alone in a batch of calls.
	Exclusive bool
	// Schema, when set, replaces the schema derived from the input type.
	// Arguments are validated against it and must still decode into In.
	Schema json.RawMessage
}

// Func is a Tool made of a Spec and a function, for tools that take raw
// JSON arguments. Both Func and *Func are Tools, and Subjecters.
type Func struct {
	ToolSpec Spec
	Fn       func(ctx context.Context, call *Call) (*Result, error)
	// SubjectFn, when set, says what a call acts on (see Subjecter), such
	// as PathSubject or CommandSubject; nil declares nothing.
	SubjectFn func(args json.RawMessage) Subject
}

// Spec returns f.ToolSpec.
func (f Func) Spec() Spec { return f.ToolSpec }

// Subject returns what f.SubjectFn says a call with args acts on; the
// zero Subject when SubjectFn is nil.
func (f Func) Subject(args json.RawMessage) Subject {
	if f.SubjectFn == nil {
		return Subject{}
	}
	return f.SubjectFn(args)
}

// Call calls f.Fn.
func (f Func) Call(ctx context.Context, call *Call) (*Result, error) {
	if f.Fn == nil {
		return nil, fmt.Errorf("tool %s has no function", f.ToolSpec.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled before it started: do not run
	}
	return f.Fn(ctx, call)
}

// DecodeArgs unmarshals call's arguments into v, empty arguments meaning
// {}, for tools that implement Tool by hand. On failure it returns the
// error result the model should see ("Invalid arguments for <tool>: …");
// nil means v holds the arguments.
func DecodeArgs(call *Call, v any) *Result {
	raw := call.Args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return Errorf("Invalid arguments for %s: %v", call.Name, err)
	}
	return nil
}

// Validated is implemented by tools that carry their compiled argument
// validator, so hosts need not compile the schema again.
type Validated interface {
	Validator() *Validator
}

// validName is what the providers accept as a tool name.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name is acceptable to the model providers:
// 1 to 64 letters, digits, underscores or hyphens.
func ValidName(name string) bool { return validName.MatchString(name) }

// New makes a tool whose arguments are the Go type In, usually a struct.
//
// The JSON Schema is derived from In with github.com/google/jsonschema-go:
// property names from `json` tags; a field is required unless its json tag
// has omitempty or omitzero or a default; the `jsonschema:"…"` tag is the
// property's description. rein adds two tags:
//
//	Mode  string   `json:"mode" enum:"read|write"`         // allowed values, separated by |
//	Limit int      `json:"limit,omitempty" default:"100"`  // default, parsed as the field's type
//	Tags  []string `json:"tags,omitempty" enum:"a|b"`      // on a slice, enum applies to the items
//
// A default is filled in before decoding when the model leaves the
// property out (top-level and nested struct fields). Arguments are
// validated (with the coercions Validator describes) and decoded into In
// with unknown fields rejected; a validation failure becomes an error
// result the model can act on, never a call of fn.
func New[In any](name, description string, fn func(ctx context.Context, in In, call *Call) (*Result, error), opts *Options) (Tool, error) {
	if opts == nil {
		opts = &Options{}
	}
	if !ValidName(name) {
		return nil, fmt.Errorf("tool: new %q: %w", name, ErrInvalidName)
	}
	if fn == nil {
		return nil, fmt.Errorf("tool: new %s: nil function", name)
	}
	t := reflect.TypeFor[In]()
	base := indirect(t)
	if base.Kind() != reflect.Struct && !(base.Kind() == reflect.Map && base.Key().Kind() == reflect.String) {
		return nil, fmt.Errorf("tool: new %s: input type %s must be a struct or a map with string keys", name, t)
	}
	schema := opts.Schema
	var defaults json.RawMessage
	if len(schema) == 0 {
		s, err := deriveSchema(t)
		if err != nil {
			return nil, fmt.Errorf("tool: new %s: %w", name, err)
		}
		if schema, err = json.Marshal(s); err != nil {
			return nil, fmt.Errorf("tool: new %s: encode schema: %w", name, err)
		}
	}
	defaults, err := defaultsOf(base)
	if err != nil {
		return nil, fmt.Errorf("tool: new %s: %w", name, err)
	}
	v, err := NewValidator(schema)
	if err != nil {
		return nil, fmt.Errorf("tool: new %s: %w", name, err)
	}
	tt := &typed[In]{
		spec: Spec{
			Name:        name,
			Description: description,
			Schema:      schema,
			Annotations: opts.Annotations,
			Exclusive:   opts.Exclusive,
		},
		v:        v,
		defaults: defaults,
		fn:       fn,
		strict:   len(opts.Schema) > 0,
	}
	if defaults != nil && plainValue(base, 0) {
		// Defaults hold no references, so a copy of a decoded prototype
		// is as good as decoding them on every call.
		if err := json.Unmarshal(defaults, &tt.proto); err != nil {
			return nil, fmt.Errorf("tool: new %s: defaults: %w", name, err)
		}
		tt.defaults, tt.useProto = nil, true
	}
	return tt, nil
}

// plainValue reports whether copying a t copies all of it: no pointers,
// slices, maps or interfaces inside.
func plainValue(t reflect.Type, depth int) bool {
	if depth > 32 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Array:
		return plainValue(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if !plainValue(t.Field(i).Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// Schema returns the JSON Schema New derives for In, with rein's enum and
// default tags applied.
func Schema[In any]() (json.RawMessage, error) {
	s, err := deriveSchema(reflect.TypeFor[In]())
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// emptyArgs reports arguments that set nothing: none, null or {}.
func emptyArgs(args json.RawMessage) bool {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		return true
	}
	if a[0] != '{' || a[len(a)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(a[1:len(a)-1])) == 0
}

type typed[In any] struct {
	spec     Spec
	v        *Validator
	defaults json.RawMessage // decoded before the arguments, unless useProto
	proto    In              // the defaults, decoded once
	useProto bool
	strict   bool // the schema was given, so unknown fields are checked while decoding
	fn       func(ctx context.Context, in In, call *Call) (*Result, error)
}

// Spec returns the tool's spec, with the derived schema.
func (t *typed[In]) Spec() Spec { return t.spec }

// Validator returns the tool's compiled validator.
func (t *typed[In]) Validator() *Validator { return t.v }

// Call validates the arguments, decodes them into In and calls the
// function; invalid arguments give an error result and no call.
func (t *typed[In]) Call(ctx context.Context, call *Call) (*Result, error) {
	args := call.Args
	if !call.Validated {
		fixed, _, err := t.v.Validate(args)
		if err != nil {
			return validationResult(err), nil
		}
		args = fixed
	}
	in, err := t.decode(args)
	if err != nil {
		return validationResult(err), nil
	}
	return t.fn(ctx, in, call)
}

func (t *typed[In]) decode(args json.RawMessage) (In, error) {
	var in In
	if t.useProto {
		in = t.proto
	} else if t.defaults != nil {
		if err := json.Unmarshal(t.defaults, &in); err != nil {
			return in, &ValidationError{Path: "/", Problem: "defaults do not decode: " + err.Error()}
		}
	}
	if emptyArgs(args) {
		return in, nil // nothing to decode: the defaults are the input
	}
	var err error
	if t.strict {
		d := json.NewDecoder(bytes.NewReader(args))
		d.DisallowUnknownFields()
		err = d.Decode(&in)
	} else {
		// The derived schema already refused unknown properties.
		err = json.Unmarshal(args, &in)
	}
	if err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return in, &ValidationError{Path: "/" + strings.ReplaceAll(ute.Field, ".", "/"), Problem: "expected " + ute.Type.String() + ", got " + ute.Value}
		}
		return in, &ValidationError{Path: "/", Problem: strings.TrimPrefix(err.Error(), "json: ")}
	}
	return in, nil
}

func validationResult(err error) *Result {
	r := Text(err.Error())
	r.IsError = true
	return r
}

// deriveSchema infers the schema of t and applies rein's tags.
func deriveSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	if err := applyTags(t, s); err != nil {
		return nil, err
	}
	plainSlices(s, map[*jsonschema.Schema]bool{})
	if len(s.Types) == 2 && s.Types[0] == "null" {
		// A pointer input: the arguments are always an object.
		s.Types, s.Type = nil, s.Types[1]
	}
	return s, nil
}

// plainSlices turns the inferred ["null","array"] of Go slices into
// "array": a nil slice and an empty one mean the same to a tool, and a
// plain type is easier on the model.
func plainSlices(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "array" {
		s.Types, s.Type = nil, "array"
	}
	plainSlices(s.Items, seen)
	plainSlices(s.AdditionalProperties, seen)
	for _, p := range s.Properties {
		plainSlices(p, seen)
	}
}

// jsonName returns a field's JSON name and whether it is encoded at all.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, f.IsExported()
}

// jsonFields yields the JSON name and field of each exported field of the
// struct type t, fields promoted from embedded structs included, that a
// `json:"-"` tag does not hide.
func jsonFields(t reflect.Type) iter.Seq2[string, reflect.StructField] {
	return func(yield func(string, reflect.StructField) bool) {
		for _, f := range reflect.VisibleFields(t) {
			if f.Anonymous {
				continue
			}
			if name, ok := jsonName(f); ok && !yield(name, f) {
				return
			}
		}
	}
}

// indirect returns the type a chain of pointers to t ends at.
func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func applyTags(t reflect.Type, s *jsonschema.Schema) error {
	t = indirect(t)
	if s == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return applyTags(t.Elem(), s.Items)
	case reflect.Map:
		return applyTags(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
	default:
		return nil
	}
	for name, f := range jsonFields(t) {
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if err := applyTags(f.Type, ps); err != nil {
			return err
		}
		ft := indirect(f.Type)
		if e, ok := f.Tag.Lookup("enum"); ok {
			target, et := ps, ft
			if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
				target, et = ps.Items, indirect(ft.Elem())
			}
			if target == nil {
				continue
			}
			target.Enum = nil
			for _, text := range strings.Split(e, "|") {
				v, err := tagValue(et, text)
				if err != nil {
					return fmt.Errorf("field %s: enum value %q: %w", f.Name, text, err)
				}
				target.Enum = append(target.Enum, v)
			}
		}
		if d, ok := f.Tag.Lookup("default"); ok {
			v, err := tagValue(ft, d)
			if err != nil {
				return fmt.Errorf("field %s: default %q: %w", f.Name, d, err)
			}
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("field %s: default %q: %w", f.Name, d, err)
			}
			ps.Default = b
			// A property with a default need not be sent.
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
			if len(s.Required) == 0 {
				s.Required = nil
			}
		}
	}
	return nil
}

// tagValue parses a tag's text as a value of Go type t.
func tagValue(t reflect.Type, text string) (any, error) {
	switch t.Kind() {
	case reflect.String:
		return text, nil
	case reflect.Bool:
		return strconv.ParseBool(text)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		return n, err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, 64)
		return n, err
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(text, 64)
	}
	// Anything else is written as JSON.
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("write it as JSON: %w", err)
	}
	return v, nil
}

// defaultsOf builds the JSON object of t's default tags, nested structs
// included, or nil when there are none.
func defaultsOf(t reflect.Type) (json.RawMessage, error) {
	m, err := defaultsMap(t, 0)
	if err != nil || m == nil {
		return nil, err
	}
	return json.Marshal(m)
}

func defaultsMap(t reflect.Type, depth int) (map[string]any, error) {
	t = indirect(t)
	if t.Kind() != reflect.Struct || depth > 32 {
		return nil, nil
	}
	var m map[string]any
	for name, f := range jsonFields(t) {
		ft := indirect(f.Type)
		var v any
		if d, ok := f.Tag.Lookup("default"); ok {
			x, err := tagValue(ft, d)
			if err != nil {
				return nil, fmt.Errorf("field %s: default %q: %w", f.Name, d, err)
			}
			v = x
		} else if ft.Kind() == reflect.Struct && f.Type.Kind() != reflect.Pointer {
			sub, err := defaultsMap(ft, depth+1)
			if err != nil {
				return nil, err
			}
			if sub != nil {
				v = sub
			}
		}
		if v != nil {
			if m == nil {
				m = make(map[string]any)
			}
			m[name] = v
		}
	}
	return m, nil
}
