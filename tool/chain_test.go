package tool

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// declaring is a tool that declares everything a tool can: it closes, it
// carries its validator, it has an origin and a subject.
type declaring struct {
	*Func
	v      *Validator
	closed bool
}

func (d *declaring) Close() error                         { d.closed = true; return nil }
func (d *declaring) Validator() *Validator                { return d.v }
func (d *declaring) Origin() string                       { return OriginProvider }
func (d *declaring) Subject(args json.RawMessage) Subject { return Subject{Path: "declared"} }

func newDeclaring(t *testing.T) *declaring {
	t.Helper()
	v, err := NewValidator(json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	return &declaring{Func: fake("decl", &Annotations{Destructive: true}), v: v}
}

func TestAsThroughWrappers(t *testing.T) {
	inner := newDeclaring(t)
	wrapped := DryRun(WithTimeout(inner, time.Minute))
	if _, ok := wrapped.(io.Closer); ok {
		t.Fatal("the wrapper itself is a Closer; the test would not test As")
	}
	c, ok := As[io.Closer](wrapped)
	if !ok {
		t.Fatal("As[io.Closer] did not find the wrapped tool's Close")
	}
	c.Close()
	if !inner.closed {
		t.Error("Close found by As is not the wrapped tool's")
	}
	if v, ok := As[Validated](wrapped); !ok || v.Validator() != inner.v {
		t.Errorf("As[Validated] = %v, %v; want the wrapped tool's validator", v, ok)
	}
	if o, ok := As[Originer](wrapped); !ok || o.Origin() != OriginProvider {
		t.Errorf("As[Originer] = %v, %v", o, ok)
	}
	if got, ok := As[*declaring](wrapped); !ok || got != inner {
		t.Errorf("As[*declaring] = %v, %v; want the wrapped tool", got, ok)
	}
	// t itself comes first: the outermost wrapper is the first Wrapper.
	if w, ok := As[Wrapper](wrapped); !ok || w != wrapped {
		t.Errorf("As[Wrapper] = %v, %v; want the outermost wrapper", w, ok)
	}
	if _, ok := As[io.Closer](WithTimeout(fake("plain", nil), time.Minute)); ok {
		t.Error("As found a Closer in a chain without one")
	}
	if _, ok := As[io.Closer](nil); ok {
		t.Error("As found a Closer in a nil tool")
	}
	if Unwrap(inner) != nil || Unwrap(WithTimeout(inner, time.Minute)) != Tool(inner) {
		t.Error("Unwrap does not return what a wrapper wraps, or nil for a plain tool")
	}
}

func TestSetValidatorThroughWrappers(t *testing.T) {
	inner := newDeclaring(t)
	s, _ := NewSet(DryRun(inner))
	if v, err := s.Validator("decl"); err != nil || v != inner.v {
		t.Errorf("Validator of a wrapped tool = %p, %v; want the wrapped tool's own %p", v, err, inner.v)
	}
}

func TestOriginOf(t *testing.T) {
	tests := []struct {
		name string
		t    Tool
		want string
	}{
		{"undeclared", fake("plain", nil), OriginNative},
		{"declared", newDeclaring(t), OriginProvider},
		{"declared under wrappers", DryRun(WithTimeout(newDeclaring(t), time.Minute)), OriginProvider},
		{"empty declaration", emptyOrigin{fake("e", nil)}, OriginNative},
	}
	for _, tt := range tests {
		if got := OriginOf(tt.t); got != tt.want {
			t.Errorf("%s: OriginOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

type emptyOrigin struct{ *Func }

func (emptyOrigin) Origin() string { return "" }

func TestSubjectOf(t *testing.T) {
	withPath := fake("read", nil)
	withPath.SubjectFn = PathSubject
	withCommand := fake("shell", nil)
	withCommand.SubjectFn = CommandSubject
	big := `{"command":"go test ./...","content":"` + strings.Repeat("x", 1<<16) + `"}`
	tests := []struct {
		name string
		t    Tool
		args string
		want Subject
	}{
		{"path", withPath, `{"path":"a/b.go","offset":3}`, Subject{Path: "a/b.go"}},
		{"path under wrappers", DryRun(WithTimeout(withPath, time.Minute)), `{"path":"x"}`, Subject{Path: "x"}},
		{"path left out", withPath, `{}`, Subject{}},
		{"command", withCommand, big, Subject{Command: "go test ./..."}},
		{"command is not a path", withCommand, `{"command":"ls","path":"p"}`, Subject{Command: "ls"}},
		{"bad arguments", withPath, `{"path":3}`, Subject{}},
		{"not JSON", withCommand, `nope`, Subject{}},
		// Nothing is guessed from the arguments of a tool that declares
		// nothing.
		{"undeclared", fake("other", nil), `{"path":"a","command":"rm -rf /"}`, Subject{}},
		{"declared by its own method", newDeclaring(t), `{}`, Subject{Path: "declared"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, SubjectOf(tt.t, json.RawMessage(tt.args))); diff != "" {
			t.Errorf("%s: SubjectOf (-want +got):\n%s", tt.name, diff)
		}
	}
}

// tracing is a middleware that logs the calls it sees into trace.
func tracing(name string, trace *[]string) Middleware {
	return func(next Tool) Tool {
		return &traced{next: next, name: name, trace: trace}
	}
}

type traced struct {
	next  Tool
	name  string
	trace *[]string
}

func (w *traced) Spec() Spec   { return w.next.Spec() }
func (w *traced) Unwrap() Tool { return w.next }
func (w *traced) Call(ctx context.Context, call *Call) (*Result, error) {
	*w.trace = append(*w.trace, w.name+" in")
	defer func() { *w.trace = append(*w.trace, w.name+" out") }()
	return w.next.Call(ctx, call)
}

func TestWrapOrder(t *testing.T) {
	var trace []string
	inner := &Func{ToolSpec: Spec{Name: "t"}, Fn: func(context.Context, *Call) (*Result, error) {
		trace = append(trace, "tool")
		return Text("ok"), nil
	}}
	w := Wrap(inner, tracing("a", &trace), nil, tracing("b", &trace))
	if _, err := Run(context.Background(), w, &Call{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a in", "b in", "tool", "b out", "a out"}, trace); diff != "" {
		t.Errorf("call order, first middleware outermost (-want +got):\n%s", diff)
	}
	if got, ok := As[*Func](w); !ok || got != inner {
		t.Error("As does not reach the tool through middleware wrappers")
	}
	if Wrap(inner) != Tool(inner) {
		t.Error("Wrap with no middleware wrapped the tool")
	}
}

func TestWrapSet(t *testing.T) {
	var trace []string
	s, _ := NewSet(fake("read", nil), fake("write", nil))
	s.Alias("cat", "read")
	w := WrapSet(s, tracing("m", &trace))
	if diff := cmp.Diff(names(s.Specs()), names(w.Specs())); diff != "" {
		t.Errorf("wrapped set's specs (-want +got):\n%s", diff)
	}
	cat, ok := w.Lookup("cat")
	if !ok {
		t.Fatal("alias lost")
	}
	if _, err := Run(context.Background(), cat, &Call{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"m in", "m out"}, trace); diff != "" {
		t.Errorf("call through the wrapped set (-want +got):\n%s", diff)
	}
	if read, _ := s.Lookup("read"); Unwrap(read) != nil {
		t.Error("WrapSet changed the original set")
	}
}

// SubjectOf runs before every approval; a large argument it does not need
// (a write's content) must cost a scan, not a copy.
func BenchmarkSubjectOf(b *testing.B) {
	write := fake("write", nil)
	write.SubjectFn = PathSubject
	t := DryRun(WithTimeout(write, time.Minute))
	args := json.RawMessage(`{"path":"src/a.go","content":"` + strings.Repeat("x", 64<<10) + `"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if SubjectOf(t, args).Path != "src/a.go" {
			b.Fatal("wrong subject")
		}
	}
}
