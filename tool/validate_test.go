package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/internal/golden"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

// checkGolden compares got with testdata/name, rewriting it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

const typicalSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "minLength": 1},
		"limit": {"type": "integer", "minimum": 1, "maximum": 1000},
		"recursive": {"type": "boolean"},
		"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": true},
		"opts": {"type": "object", "properties": {"depth": {"type": "integer"}}, "additionalProperties": false},
		"ratio": {"type": "number", "exclusiveMinimum": 0},
		"mode": {"type": "string", "enum": ["fast", "slow"]},
		"note": {"type": ["string", "null"]},
		"id": {"type": "string", "pattern": "^[a-z]+$"}
	},
	"required": ["path"],
	"additionalProperties": false
}`

func mustValidator(t testing.TB, schema string) *Validator {
	t.Helper()
	v, err := NewValidator(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

// canon re-encodes JSON so comparisons ignore key order and spacing.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestB13_Coercions(t *testing.T) {
	v := mustValidator(t, typicalSchema)
	tests := []struct {
		name        string
		args        string
		want        string
		wantCoerced []string
	}{
		{"integer as string", `{"path":"a","limit":"5"}`, `{"path":"a","limit":5}`, []string{"/limit"}},
		{"negative integer as string", `{"path":"a","opts":{"depth":"-2"}}`, `{"path":"a","opts":{"depth":-2}}`, []string{"/opts/depth"}},
		{"number as string", `{"path":"a","ratio":"2.5"}`, `{"path":"a","ratio":2.5}`, []string{"/ratio"}},
		{"boolean as string", `{"path":"a","recursive":"true"}`, `{"path":"a","recursive":true}`, []string{"/recursive"}},
		{"boolean as capitalised string", `{"path":"a","recursive":"False"}`, `{"path":"a","recursive":false}`, []string{"/recursive"}},
		{"integral float for integer", `{"path":"a","limit":5.0}`, `{"path":"a","limit":5}`, []string{"/limit"}},
		{"exponent for integer", `{"path":"a","limit":"1e2"}`, `{"path":"a","limit":100}`, []string{"/limit"}},
		{"number for string", `{"path":5}`, `{"path":"5"}`, []string{"/path"}},
		{"boolean for string", `{"path":true}`, `{"path":"true"}`, []string{"/path"}},
		{"object as JSON string", `{"path":"a","opts":"{\"depth\":3}"}`, `{"path":"a","opts":{"depth":3}}`, []string{"/opts"}},
		{"object as JSON string with inner coercion", `{"path":"a","opts":" {\"depth\":\"3\"} "}`, `{"path":"a","opts":{"depth":3}}`, []string{"/opts", "/opts/depth"}},
		{"array as JSON string", `{"path":"a","tags":"[\"x\",\"y\"]"}`, `{"path":"a","tags":["x","y"]}`, []string{"/tags"}},
		{"single value wrapped", `{"path":"a","tags":"x"}`, `{"path":"a","tags":["x"]}`, []string{"/tags"}},
		{"single number wrapped and stringified", `{"path":"a","tags":7}`, `{"path":"a","tags":["7"]}`, []string{"/tags", "/tags/0"}},
		{"array item coerced", `{"path":"a","tags":[1,"b"]}`, `{"path":"a","tags":["1","b"]}`, []string{"/tags/0"}},
		{"null optional dropped", `{"path":"a","limit":null}`, `{"path":"a"}`, []string{"/limit"}},
		{"null allowed kept", `{"path":"a","note":null}`, `{"path":"a","note":null}`, nil},
		{"whole arguments as JSON string", `"{\"path\":\"a\"}"`, `{"path":"a"}`, []string{"/"}},
		{"several at once in schema order", `{"recursive":"true","limit":"3","path":5}`, `{"path":"5","limit":3,"recursive":true}`, []string{"/path", "/limit", "/recursive"}},
		{"nothing to coerce", `{"path":"a","limit":5,"tags":["x"],"mode":"fast"}`, `{"path":"a","limit":5,"tags":["x"],"mode":"fast"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fixed, coerced, err := v.Validate(json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("Validate(%s): %v", tt.args, err)
			}
			if diff := cmp.Diff(canon(t, []byte(tt.want)), canon(t, fixed)); diff != "" {
				t.Errorf("fixed args mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCoerced, coerced); diff != "" {
				t.Errorf("coerced paths mismatch (-want +got):\n%s", diff)
			}
			if tt.wantCoerced == nil && !bytes.Equal(fixed, []byte(tt.args)) {
				t.Errorf("args with nothing to coerce were rewritten: %s", fixed)
			}
		})
	}
}

func TestB12_EmptyArgumentsMeanEmptyObject(t *testing.T) {
	v := mustValidator(t, `{"type":"object","properties":{"q":{"type":"string"}}}`)
	for _, args := range []string{"", "  ", "null", "{}"} {
		fixed, coerced, err := v.Validate(json.RawMessage(args))
		if err != nil {
			t.Fatalf("Validate(%q): %v", args, err)
		}
		if string(fixed) != "{}" || coerced != nil {
			t.Errorf("Validate(%q) = %s, %v; want {}, no coercions", args, fixed, coerced)
		}
	}
	// Empty still has to satisfy required properties.
	req := mustValidator(t, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	if _, _, err := req.Validate(nil); err == nil || err.Error() != `Validation error: missing required property "q", at /` {
		t.Errorf("empty args against a required property: got %v", err)
	}
}

// TestB12_Rejections pins the exact text the model sees for each kind of
// bad argument.
func TestB12_Rejections(t *testing.T) {
	v := mustValidator(t, typicalSchema)
	tests := []struct{ name, args string }{
		{"missing required", `{"limit":5}`},
		{"unexpected property", `{"path":"a","colour":"red"}`},
		{"unexpected property beside a dropped null", `{"path":"a","limit":null,"colour":"red"}`},
		{"nested unexpected property", `{"path":"a","opts":{"depth":1,"width":2}}`},
		{"lossy integer from string", `{"path":"a","limit":"5.5"}`},
		{"lossy integer from number", `{"path":"a","limit":5.5}`},
		{"not a number", `{"path":"a","limit":"five"}`},
		{"not a boolean", `{"path":"a","recursive":"yes"}`},
		{"null for required", `{"path":null}`},
		{"enum", `{"path":"a","mode":"medium"}`},
		{"minimum", `{"path":"a","limit":0}`},
		{"maximum", `{"path":"a","limit":"1001"}`},
		{"exclusive minimum", `{"path":"a","ratio":0}`},
		{"min length", `{"path":""}`},
		{"pattern", `{"path":"a","id":"ABC"}`},
		{"array item type", `{"path":"a","tags":["x",{"y":1}]}`},
		{"max items", `{"path":"a","tags":["a","b","c","d"]}`},
		{"unique items", `{"path":"a","tags":["a","b","a"]}`},
		{"object sent as bad JSON string", `{"path":"a","opts":"{depth: 3}"}`},
		{"arguments are an array", `[1,2]`},
		{"arguments are a number", `42`},
		{"invalid JSON", `{"path":"a",}`},
		{"truncated JSON", `{"path":"a"`},
		{"trailing data", `{"path":"a"} {"path":"b"}`},
		{"long value is shortened", `{"path":"a","mode":"` + strings.Repeat("é", 60) + `"}`},
	}
	var out bytes.Buffer
	for _, tt := range tests {
		_, _, err := v.Validate(json.RawMessage(tt.args))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: Validate(%s) = %v, want a *ValidationError", tt.name, tt.args, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "Validation error: ") {
			t.Errorf("%s: message %q lacks the model-facing prefix", tt.name, err)
		}
		fmt.Fprintf(&out, "%s\n\t%s\n", tt.name, err)
	}
	checkGolden(t, "rejections.golden", out.Bytes())
}

func TestValidateRefsAndAlternatives(t *testing.T) {
	// The shape pydantic and many MCP servers emit: $defs, $ref and
	// anyOf with null for optional fields.
	const schema = `{
		"type": "object",
		"$defs": {
			"Item": {"type": "object", "properties": {"n": {"type": "integer"}, "child": {"$ref": "#/$defs/Item"}}, "required": ["n"], "additionalProperties": false}
		},
		"properties": {
			"item": {"$ref": "#/$defs/Item"},
			"count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
			"shape": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}
		},
		"additionalProperties": false
	}`
	v := mustValidator(t, schema)
	tests := []struct {
		name        string
		args        string
		want        string
		wantCoerced []string
		wantErr     string
	}{
		{name: "ref coerced deep", args: `{"item":{"n":"1","child":{"n":"2"}}}`, want: `{"item":{"n":1,"child":{"n":2}}}`, wantCoerced: []string{"/item/n", "/item/child/n"}},
		{name: "anyOf null kept", args: `{"count":null}`, want: `{"count":null}`},
		{name: "anyOf coerced", args: `{"count":"4"}`, want: `{"count":4}`, wantCoerced: []string{"/count"}},
		{name: "oneOf coerced", args: `{"shape":"true"}`, want: `{"shape":true}`, wantCoerced: []string{"/shape"}},
		{name: "ref missing required", args: `{"item":{"child":{}}}`, wantErr: `Validation error: missing required property "n", at /item`},
		{name: "anyOf reports the one real alternative", args: `{"count":"x"}`, wantErr: `Validation error: expected integer, got string "x", at /count`},
		{name: "oneOf none", args: `{"shape":"x"}`, wantErr: `Validation error: string "x" matches none of the allowed alternatives, at /shape`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fixed, coerced, err := v.Validate(json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Validate(%s) error = %v, want %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate(%s): %v", tt.args, err)
			}
			if diff := cmp.Diff(canon(t, []byte(tt.want)), canon(t, fixed)); diff != "" {
				t.Errorf("fixed mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCoerced, coerced); diff != "" {
				t.Errorf("coerced mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateKeywordsBeyondTheWalk checks that keywords rein's own walk
// does not interpret are still enforced, after coercion.
func TestValidateAllOfAndUntypedEnums(t *testing.T) {
	// Older pydantic wraps a $ref in allOf to attach a description.
	v := mustValidator(t, `{
		"type": "object",
		"definitions": {"Size": {"type": "integer", "minimum": 1}},
		"properties": {
			"size": {"allOf": [{"$ref": "#/definitions/Size"}], "description": "how big"},
			"level": {"enum": [1, 2, true]},
			"both": {"allOf": [{"type": "integer"}, {"maximum": 10}]}
		}
	}`)
	if v.lib != nil {
		t.Error("allOf of local refs needs no second validator")
	}
	fixed, coerced, err := v.Validate(json.RawMessage(`{"size":"3","level":"2","both":"7"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"both":7,"level":2,"size":3}`, canon(t, fixed)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/size", "/level", "/both"}, coerced); diff != "" {
		t.Errorf("coerced (-want +got):\n%s", diff)
	}
	for args, want := range map[string]string{
		`{"size":0}`:       "Validation error: must be at least 1, got 0, at /size",
		`{"both":"11"}`:    "Validation error: must be at most 10, got 11, at /both",
		`{"level":"3"}`:    `Validation error: "3" is not one of the allowed values 1, 2, true, at /level`,
		`{"level":"true"}`: "",
	} {
		_, _, err := v.Validate(json.RawMessage(args))
		if (err == nil && want != "") || (err != nil && err.Error() != want) {
			t.Errorf("Validate(%s) = %v, want %q", args, err, want)
		}
	}
}

func TestValidateKeywordsBeyondTheWalk(t *testing.T) {
	v := mustValidator(t, `{
		"type": "object",
		"properties": {
			"n": {"type": "integer", "multipleOf": 5},
			"s": {"not": {"type": "integer"}, "type": ["string", "integer"], "minLength": 2}
		}
	}`)
	if _, _, err := v.Validate(json.RawMessage(`{"n":"10","s":"ab"}`)); err != nil {
		t.Errorf("valid args rejected: %v", err)
	}
	tests := []struct{ args, want string }{
		{`{"n":"7"}`, `Validation error: multipleOf: 7 is not a multiple of 5, at /n`},
		{`{"s":"a"}`, `Validation error: must be at least 2 characters long, got 1, at /s`},
		{`{"s":3}`, `Validation error: the value matches a schema it must not match, at /s`},
	}
	for _, tt := range tests {
		if _, _, err := v.Validate(json.RawMessage(tt.args)); err == nil || err.Error() != tt.want {
			t.Errorf("Validate(%s) = %v, want %s", tt.args, err, tt.want)
		}
	}
}

func TestNewValidatorErrors(t *testing.T) {
	for _, schema := range []string{`{"type":"blob"}`, `{"type":"object","properties":{"a":{"pattern":"(("}}}`, `[1]`, `{"$ref":"https://example.com/s.json"}`} {
		if _, err := NewValidator(json.RawMessage(schema)); err == nil {
			t.Errorf("NewValidator(%s) succeeded, want an error", schema)
		}
	}
}

func TestNewValidatorCaches(t *testing.T) {
	a := mustValidator(t, typicalSchema)
	b := mustValidator(t, typicalSchema)
	if a != b {
		t.Error("the same schema compiled twice; validators must be cached")
	}
}

func TestCachedValidatorLookupDoesNotAllocate(t *testing.T) {
	schema := json.RawMessage(typicalSchema)
	mustValidator(t, typicalSchema)
	if n := testing.AllocsPerRun(100, func() { NewValidator(schema) }); n != 0 {
		t.Errorf("NewValidator of a cached schema: %v allocations, want 0", n)
	}
}

func TestBigIntegersKeepTheirDigits(t *testing.T) {
	v := mustValidator(t, `{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":"string"}}}`)
	fixed, coerced, err := v.Validate(json.RawMessage(`{"id":123456789012345678901234567890,"tag":7}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":123456789012345678901234567890,"tag":"7"}`; string(fixed) != want {
		t.Errorf("fixed = %s, want %s", fixed, want)
	}
	if diff := cmp.Diff([]string{"/tag"}, coerced); diff != "" {
		t.Errorf("coerced (-want +got):\n%s", diff)
	}
	if _, _, err := v.Validate(json.RawMessage(`{"id":"1e999999"}`)); err == nil {
		t.Error("an integer too long to write out was accepted")
	}
}

var fuzzSchemas = []string{
	typicalSchema,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":["integer","null"]},"c":{"type":"boolean"}},"required":["c"]}}}}`,
	`{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"string"}}]},"y":{"oneOf":[{"type":"number"},{"type":"boolean"}]}}}`,
	`{"type":"object","$defs":{"I":{"type":"object","properties":{"n":{"type":"integer","minimum":0},"k":{"$ref":"#/$defs/I"}},"required":["n"]}},"properties":{"i":{"$ref":"#/$defs/I"},"m":{"type":"object","additionalProperties":{"type":"number"},"maxProperties":2},"e":{"enum":[1,"a",true,null]},"c":{"const":{"x":[1]}}}}`,
	`{"type":"object","properties":{"n":{"type":"integer","multipleOf":3},"s":{"allOf":[{"type":"string"},{"maxLength":3}]},"a":{"type":"array","items":{"type":"boolean"},"minItems":1}}}`,
}

// FuzzValidate checks that validation never panics and that whatever it
// accepts is accepted again unchanged, with no further coercion.
func FuzzValidate(f *testing.F) {
	seeds := []string{
		`{"path":"a","limit":"5"}`, `{"path":5,"tags":"x"}`, `{"path":"a","opts":"{\"depth\":\"3\"}"}`,
		`{"a":[{"b":"1","c":"true"}]}`, `{"x":"[\"a\"]","y":"1.5"}`, `"{\"path\":\"a\"}"`, ``, `null`,
		`{"path":"a","limit":1e2}`, `{"a":{"c":"false"}}`, `{"x":"5","y":"false"}`, `{"path":"a","limit":null}`,
		`{"i":{"n":"1","k":{"n":2.0}},"m":{"a":"1.5"},"e":"a","c":{"x":[1]}}`, `{"n":"6","s":"abc","a":"true"}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	vs := make([]*Validator, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		v, err := NewValidator(json.RawMessage(s))
		if err != nil {
			f.Fatal(err)
		}
		vs[i] = v
	}
	// jsonschema-go is the oracle for what is valid.
	oracles := make([]*jsonschema.Resolved, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		var js jsonschema.Schema
		if err := json.Unmarshal([]byte(s), &js); err != nil {
			f.Fatal(err)
		}
		rs, err := js.Resolve(nil)
		if err != nil {
			f.Fatal(err)
		}
		oracles[i] = rs
	}
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		i := int(which) % len(vs)
		v := vs[i]
		fixed, _, err := v.Validate(json.RawMessage(args))
		var plain any
		origValid := json.Unmarshal([]byte(args), &plain) == nil && plain != nil && oracles[i].Validate(plain) == nil
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate(%q) returned %T %v, want *ValidationError", args, err, err)
			}
			if origValid {
				t.Fatalf("Validate(%q) rejected valid arguments: %v", args, err)
			}
			return
		}
		var fixedPlain any
		if err := json.Unmarshal(fixed, &fixedPlain); err == nil {
			if err := oracles[i].Validate(fixedPlain); err != nil {
				t.Fatalf("Validate(%q) accepted %s, which jsonschema-go rejects: %v", args, fixed, err)
			}
		}
		if !json.Valid(fixed) {
			t.Fatalf("Validate(%q) accepted and returned invalid JSON %q", args, fixed)
		}
		again, coerced, err := v.Validate(fixed)
		if err != nil {
			t.Fatalf("fixed args %s from %q do not re-validate: %v", fixed, args, err)
		}
		if len(coerced) != 0 {
			t.Fatalf("fixed args %s from %q needed more coercion: %v", fixed, args, coerced)
		}
		if !bytes.Equal(again, fixed) {
			t.Fatalf("re-validation changed %s into %s", fixed, again)
		}
	})
}

// BenchmarkValidate measures one call's validation against a typical
// four-property schema.
func BenchmarkValidate(b *testing.B) {
	v := mustValidator(b, `{
		"type": "object",
		"properties": {
			"path": {"type": "string"},
			"offset": {"type": "integer", "minimum": 0},
			"limit": {"type": "integer", "minimum": 1},
			"recursive": {"type": "boolean"}
		},
		"required": ["path"],
		"additionalProperties": false
	}`)
	b.Run("clean", func(b *testing.B) {
		args := json.RawMessage(`{"path":"src/main.go","offset":10,"limit":200,"recursive":false}`)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := v.Validate(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("coerced", func(b *testing.B) {
		args := json.RawMessage(`{"path":"src/main.go","offset":"10","limit":"200","recursive":"false"}`)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := v.Validate(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
