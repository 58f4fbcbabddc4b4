package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
)

type readArgs struct {
	Path      string   `json:"path" jsonschema:"file to read, relative to the workspace"`
	Offset    int      `json:"offset,omitempty" jsonschema:"first line, 0-based"`
	Limit     int      `json:"limit,omitempty" default:"200"`
	Encoding  string   `json:"encoding,omitempty" enum:"utf-8|latin-1" default:"utf-8"`
	Recursive bool     `json:"recursive,omitempty"`
	Globs     []string `json:"globs,omitempty"`
}

type nestedArgs struct {
	Name  string         `json:"name"`
	Level int            `json:"level" enum:"1|2|3"`
	Ratio *float64       `json:"ratio,omitempty"`
	Box   boxArgs        `json:"box"`
	Items []itemArgs     `json:"items,omitempty"`
	Kinds []string       `json:"kinds,omitempty" enum:"a|b"`
	Extra map[string]int `json:"extra,omitempty"`
	Skip  string         `json:"-"`
}

type boxArgs struct {
	Width  int    `json:"width" default:"10"`
	Colour string `json:"colour,omitempty" default:"red"`
}

type itemArgs struct {
	ID     string `json:"id"`
	Status string `json:"status" enum:"pending|done"`
}

func TestSchemaDerivation(t *testing.T) {
	tests := []struct {
		name   string
		schema func() (json.RawMessage, error)
	}{
		{"read", Schema[readArgs]},
		{"nested", Schema[nestedArgs]},
		{"empty", Schema[struct{}]},
		{"pointer", Schema[*boxArgs]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := tt.schema()
			if err != nil {
				t.Fatal(err)
			}
			var pretty strings.Builder
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			// Keep the derived property order: indent the raw bytes.
			b, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
			pretty.Write(b)
			pretty.WriteByte('\n')
			checkGolden(t, "schema/"+tt.name+".json", []byte(pretty.String()))
			if _, err := NewValidator(raw); err != nil {
				t.Errorf("derived schema does not compile: %v", err)
			}
		})
	}
}

func TestSchemaTagErrors(t *testing.T) {
	type badEnum struct {
		N int `json:"n" enum:"1|two"`
	}
	type badDefault struct {
		B bool `json:"b" default:"maybe"`
	}
	if _, err := Schema[badEnum](); err == nil {
		t.Error("an enum value that is not an int was accepted")
	}
	if _, err := Schema[badDefault](); err == nil {
		t.Error("a default that is not a bool was accepted")
	}
}

func TestNewCallsWithDecodedInput(t *testing.T) {
	var got readArgs
	rd, err := New("read", "Reads a file.", func(ctx context.Context, in readArgs, call *Call) (*Result, error) {
		got = in
		return Text("ok"), nil
	}, &Options{Annotations: &Annotations{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args string
		want readArgs
	}{
		{"defaults filled", `{"path":"a.go"}`, readArgs{Path: "a.go", Limit: 200, Encoding: "utf-8"}},
		{"given values win", `{"path":"a.go","limit":5,"encoding":"latin-1"}`, readArgs{Path: "a.go", Limit: 5, Encoding: "latin-1"}},
		{"coerced", `{"path":"a.go","offset":"3","recursive":"true","globs":"*.go"}`, readArgs{Path: "a.go", Offset: 3, Limit: 200, Encoding: "utf-8", Recursive: true, Globs: []string{"*.go"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = readArgs{}
			res, err := rd.Call(context.Background(), &Call{Name: "read", Args: json.RawMessage(tt.args)})
			if err != nil || res.IsError {
				t.Fatalf("Call: %v %v", res.TextOf(), err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("input mismatch (-want +got):\n%s", diff)
			}
		})
	}
	sp := rd.Spec()
	if sp.Name != "read" || sp.Description != "Reads a file." || sp.Annotations == nil || !sp.Annotations.ReadOnly {
		t.Errorf("Spec = %+v", sp)
	}
}

func TestNewRejectsBadArgumentsWithoutCalling(t *testing.T) {
	called := false
	rd, err := New("read", "Reads a file.", func(ctx context.Context, in readArgs, call *Call) (*Result, error) {
		called = true
		return Text("ok"), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, args, want string }{
		{"unknown field", `{"path":"a","mode":"x"}`, `Validation error: unexpected property "mode", at /`},
		{"enum", `{"path":"a","encoding":"ascii"}`, `Validation error: "ascii" is not one of the allowed values "utf-8", "latin-1", at /encoding`},
		{"missing", `{}`, `Validation error: missing required property "path", at /`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := rd.Call(context.Background(), &Call{Args: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.TextOf() != tt.want {
				t.Errorf("result = %q (error %v), want %q", res.TextOf(), res.IsError, tt.want)
			}
			if called {
				t.Error("the function ran with invalid arguments")
			}
		})
	}
}

func TestNewNestedDefaultsAndSchemaOverride(t *testing.T) {
	var got nestedArgs
	tl, err := New("nest", "d", func(ctx context.Context, in nestedArgs, call *Call) (*Result, error) {
		got = in
		return nil, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Call(context.Background(), &Call{Args: json.RawMessage(`{"name":"n","level":2,"box":{"width":3}}`)}); err != nil {
		t.Fatal(err)
	}
	want := nestedArgs{Name: "n", Level: 2, Box: boxArgs{Width: 3, Colour: "red"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input mismatch (-want +got):\n%s", diff)
	}

	// An override schema is what the model sees and what is enforced.
	override := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":3}},"required":["path"]}`)
	o, err := New("o", "d", func(ctx context.Context, in readArgs, call *Call) (*Result, error) { return Text(in.Path), nil }, &Options{Schema: override, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(o.Spec().Schema) != string(override) || !o.Spec().Exclusive {
		t.Errorf("Spec = %+v", o.Spec())
	}
	res, _ := o.Call(context.Background(), &Call{Args: json.RawMessage(`{"path":"long"}`)})
	if !res.IsError {
		t.Errorf("override schema not enforced: %q", res.TextOf())
	}
}

func TestDefaultsAreFreshEachCall(t *testing.T) {
	type args struct {
		Tags []string `json:"tags,omitempty" default:"[\"a\",\"b\"]"`
		N    int      `json:"n,omitempty" default:"3"`
	}
	var got []args
	tl, err := New("d", "d", func(ctx context.Context, in args, call *Call) (*Result, error) {
		got = append(got, args{Tags: append([]string(nil), in.Tags...), N: in.N})
		if len(in.Tags) > 0 {
			in.Tags[0] = "mutated"
		}
		return nil, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{`{}`, `{"tags":["x"],"n":1}`, `{}`} {
		if _, err := Run(context.Background(), tl, &Call{Args: json.RawMessage(a)}); err != nil {
			t.Fatal(err)
		}
	}
	want := []args{{Tags: []string{"a", "b"}, N: 3}, {Tags: []string{"x"}, N: 1}, {Tags: []string{"a", "b"}, N: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if tl.(*typed[args]).useProto {
		t.Error("a slice default was copied by value")
	}
}

func TestNewErrors(t *testing.T) {
	fn := func(ctx context.Context, in readArgs, call *Call) (*Result, error) { return nil, nil }
	if _, err := New("bad name", "d", fn, nil); !errors.Is(err, ErrInvalidName) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := New[readArgs]("x", "d", nil, nil); err == nil {
		t.Error("nil function accepted")
	}
	if _, err := New("x", "d", func(ctx context.Context, in int, call *Call) (*Result, error) { return nil, nil }, nil); err == nil {
		t.Error("non-object input type accepted")
	}
}

func TestResultHelpers(t *testing.T) {
	r := JSON(map[string]int{"a": 1})
	if r.TextOf() != `{"a":1}` || r.IsError {
		t.Errorf("JSON = %q", r.TextOf())
	}
	if r := JSON(make(chan int)); !r.IsError || !strings.HasPrefix(r.TextOf(), "Tool error: ") {
		t.Errorf("JSON(chan) = %q, want an error result", r.TextOf())
	}
	img := Image("image/png", []byte{1, 2})
	if diff := cmp.Diff([]llm.Part{&llm.Image{MediaType: "image/png", Data: []byte{1, 2}}}, img.Parts); diff != "" {
		t.Errorf("Image (-want +got):\n%s", diff)
	}
	e := Errorf("bad %d", 7).WithMeta("k", "v")
	if !e.IsError || e.TextOf() != "bad 7" || e.Meta["k"] != "v" {
		t.Errorf("Errorf = %+v", e)
	}
}

// BenchmarkTypedCall measures a typed tool's call through Run: validation,
// decoding into the struct, the function and settling.
func BenchmarkTypedCall(b *testing.B) {
	type args struct {
		Path      string `json:"path"`
		Offset    int    `json:"offset,omitempty"`
		Limit     int    `json:"limit,omitempty" default:"200"`
		Recursive bool   `json:"recursive,omitempty"`
	}
	tl, err := New("read", "d", func(ctx context.Context, in args, call *Call) (*Result, error) {
		return Text(in.Path), nil
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, validated := range []bool{false, true} {
		name := "direct"
		if validated {
			name = "validated-by-loop"
		}
		b.Run(name, func(b *testing.B) {
			call := &Call{Name: "read", Args: json.RawMessage(`{"path":"src/main.go","offset":10,"limit":200,"recursive":false}`), Validated: validated}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := Run(ctx, tl, call); err != nil || res.IsError {
					b.Fatal(res.TextOf(), err)
				}
			}
		})
	}
}
