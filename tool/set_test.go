package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
)

func fake(name string, ann *Annotations) *Func {
	return &Func{
		ToolSpec: Spec{Name: name, Description: name + " tool", Schema: json.RawMessage(`{"type":"object"}`), Annotations: ann},
		Fn: func(ctx context.Context, call *Call) (*Result, error) {
			return Text(name + " ran with " + string(call.Args)), nil
		},
	}
}

func names(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestSet(t *testing.T) {
	s, err := NewSet(fake("read", nil), fake("write", nil), fake("grep", nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("order", func(t *testing.T) {
		if diff := cmp.Diff([]string{"read", "write", "grep"}, names(s.Specs())); diff != "" {
			t.Errorf("Specs order (-want +got):\n%s", diff)
		}
		if s.Len() != 3 || len(s.Tools()) != 3 || s.Tools()[2].Spec().Name != "grep" {
			t.Errorf("Len %d Tools %v", s.Len(), s.Tools())
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		if err := s.Add(fake("read", nil)); !errors.Is(err, ErrDuplicateName) {
			t.Errorf("Add(read) = %v, want ErrDuplicateName", err)
		}
		if _, err := NewSet(fake("a", nil), fake("a", nil)); !errors.Is(err, ErrDuplicateName) {
			t.Errorf("NewSet(a, a) = %v, want ErrDuplicateName", err)
		}
	})
	t.Run("invalid name", func(t *testing.T) {
		if err := s.Add(fake("server.tool", nil)); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Add(server.tool) = %v, want ErrInvalidName", err)
		}
	})
	t.Run("alias", func(t *testing.T) {
		if err := s.Alias("cat", "read"); err != nil {
			t.Fatal(err)
		}
		tl, ok := s.Lookup("cat")
		if !ok || tl.Spec().Name != "read" {
			t.Fatalf("Lookup(cat) = %v, %v", tl, ok)
		}
		if real, ok := s.Canonical("cat"); !ok || real != "read" {
			t.Errorf("Canonical(cat) = %q, %v", real, ok)
		}
		if diff := cmp.Diff([]string{"read", "write", "grep"}, names(s.Specs())); diff != "" {
			t.Errorf("a hidden alias changed Specs (-want +got):\n%s", diff)
		}
		if err := s.Alias("cat", "write"); !errors.Is(err, ErrDuplicateName) {
			t.Errorf("second alias cat = %v", err)
		}
		if err := s.Alias("grep", "read"); !errors.Is(err, ErrDuplicateName) {
			t.Errorf("alias shadowing a tool = %v", err)
		}
		if err := s.Alias("x", "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("alias of unknown = %v", err)
		}
		if err := s.Add(fake("cat", nil)); !errors.Is(err, ErrDuplicateName) {
			t.Errorf("tool named like an alias = %v", err)
		}
		if err := s.AliasWith("search", "grep", &AliasOptions{Advertise: true}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"read", "write", "search"}, names(s.Specs())); diff != "" {
			t.Errorf("advertised alias (-want +got):\n%s", diff)
		}
		if tl, ok := s.Lookup("grep"); !ok || tl.Spec().Name != "grep" {
			t.Error("the real name stopped resolving after an advertised alias")
		}
	})
	t.Run("unknown", func(t *testing.T) {
		if _, ok := s.Lookup("nope"); ok {
			t.Error("Lookup(nope) found something")
		}
		var nilSet *Set
		if _, ok := nilSet.Lookup("read"); ok || nilSet.Len() != 0 || nilSet.Specs() != nil {
			t.Error("a nil set is not empty")
		}
	})
}

func TestSetRemove(t *testing.T) {
	s, _ := NewSet(fake("a", nil), fake("b", nil), fake("c", nil))
	s.AliasWith("bee", "b", &AliasOptions{Advertise: true})
	if err := s.Remove("bee"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup("b"); ok {
		t.Error("b still there")
	}
	if _, ok := s.Lookup("bee"); ok {
		t.Error("alias of a removed tool still resolves")
	}
	if diff := cmp.Diff([]string{"a", "c"}, names(s.Specs())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if tl, ok := s.Lookup("c"); !ok || tl.Spec().Name != "c" {
		t.Error("index of later tools broken")
	}
	if err := s.Remove("b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second remove = %v", err)
	}
	if err := s.Add(fake("b", nil)); err != nil {
		t.Errorf("re-adding a removed name: %v", err)
	}
}

func TestSetSpecsCachedUntilChange(t *testing.T) {
	s, _ := NewSet(fake("a", nil))
	first := s.Specs()
	if &first[0] != &s.Specs()[0] {
		t.Error("Specs recomputed with no change")
	}
	if err := s.Add(fake("b", nil)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, names(s.Specs())); diff != "" {
		t.Errorf("Specs after Add (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, names(first)); diff != "" {
		t.Errorf("an earlier Specs slice changed (-want +got):\n%s", diff)
	}
}

func TestSetValidator(t *testing.T) {
	typedTool, err := New("typed", "d", func(ctx context.Context, in readArgs, call *Call) (*Result, error) { return nil, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSet(fake("raw", nil), typedTool)
	v, err := s.Validator("typed")
	if err != nil || v != typedTool.(Validated).Validator() {
		t.Errorf("typed tool's own validator not reused: %v", err)
	}
	v1, err := s.Validator("raw")
	if err != nil {
		t.Fatal(err)
	}
	if v2, _ := s.Validator("raw"); v1 != v2 {
		t.Error("validator compiled twice")
	}
	if _, err := s.Validator("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Validator(nope) = %v", err)
	}
}

func TestSetConcurrentReadsAndWrites(t *testing.T) {
	s, _ := NewSet(fake("base", nil))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if err := s.Add(fake(fmt.Sprintf("t%d_%d", i, j), nil)); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				if _, ok := s.Lookup("base"); !ok {
					t.Error("base vanished")
				}
				_ = s.Specs()
			}
		}()
	}
	wg.Wait()
	if s.Len() != 201 {
		t.Errorf("Len = %d, want 201", s.Len())
	}
}

func BenchmarkSetLookup(b *testing.B) {
	s, _ := NewSet(fake("read", nil), fake("write", nil), fake("grep", nil), fake("shell", nil))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Lookup("shell"); !ok {
			b.Fatal("missing")
		}
		_ = s.Specs()
	}
}
