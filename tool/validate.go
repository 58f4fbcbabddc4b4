package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

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

func encodeJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
