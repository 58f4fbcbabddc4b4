// Package tooltest has fakes and conformance tests for the tool seams.
//
// Quick start — check a StateStore implementation:
//
//	func TestMyStore(t *testing.T) {
//		tooltest.TestStateStore(t, func(t *testing.T) tool.StateStore { return mystore.New(t.TempDir()) })
//	}
//
// and record what a loop does with a tool:
//
//	rec := tooltest.NewRecorder("echo", nil)
//	… run the loop with rec in its tool set …
//	calls := rec.Calls()
//
// and check what each tool of a set declares it acts on:
//
//	got := tooltest.Subjects(t, tools, map[string]string{"read": `{"path":"a.go"}`})
package tooltest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/reinhq/rein/tool"
)

// TestStateStore checks that a StateStore keeps the contract documented on
// tool.StateStore. newStore returns a fresh, empty store for each subtest.
func TestStateStore(t *testing.T, newStore func(t *testing.T) tool.StateStore) {
	ctx := context.Background()
	load := func(t *testing.T, s tool.StateStore, session, name string) map[string]string {
		t.Helper()
		m, err := s.Load(ctx, session, name)
		if err != nil {
			t.Fatalf("Load(%s, %s): %v", session, name, err)
		}
		return m
	}
	commit := func(t *testing.T, s tool.StateStore, session, name string, w map[string]string) {
		t.Helper()
		if err := s.Commit(ctx, session, name, w); err != nil {
			t.Fatalf("Commit(%s, %s): %v", session, name, err)
		}
	}
	equal := func(t *testing.T, what string, want, got map[string]string) {
		t.Helper()
		if len(want) != len(got) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s = %v, want %v", what, got, want)
			}
		}
	}

	t.Run("EmptyLoad", func(t *testing.T) {
		equal(t, "state of a new session", nil, load(t, newStore(t), "s", "t"))
	})
	t.Run("CommitThenLoad", func(t *testing.T) {
		s := newStore(t)
		commit(t, s, "s", "t", map[string]string{"a": "1", "b": "2"})
		commit(t, s, "s", "t", map[string]string{"b": "3", "c": "4"})
		equal(t, "state after two commits", map[string]string{"a": "1", "b": "3", "c": "4"}, load(t, s, "s", "t"))
	})
	t.Run("EmptyValueRemoves", func(t *testing.T) {
		s := newStore(t)
		commit(t, s, "s", "t", map[string]string{"a": "1", "b": "2"})
		commit(t, s, "s", "t", map[string]string{"a": ""})
		equal(t, "state after removing a", map[string]string{"b": "2"}, load(t, s, "s", "t"))
	})
	t.Run("Isolation", func(t *testing.T) {
		s := newStore(t)
		commit(t, s, "s1", "t1", map[string]string{"k": "s1t1"})
		commit(t, s, "s1", "t2", map[string]string{"k": "s1t2"})
		commit(t, s, "s2", "t1", map[string]string{"k": "s2t1"})
		equal(t, "s1/t1", map[string]string{"k": "s1t1"}, load(t, s, "s1", "t1"))
		equal(t, "s1/t2", map[string]string{"k": "s1t2"}, load(t, s, "s1", "t2"))
		equal(t, "s2/t1", map[string]string{"k": "s2t1"}, load(t, s, "s2", "t1"))
		equal(t, "s2/t2", nil, load(t, s, "s2", "t2"))
	})
	t.Run("LoadReturnsACopy", func(t *testing.T) {
		s := newStore(t)
		w := map[string]string{"a": "1"}
		commit(t, s, "s", "t", w)
		w["a"] = "changed after commit"
		m := load(t, s, "s", "t")
		m["a"] = "changed after load"
		equal(t, "state", map[string]string{"a": "1"}, load(t, s, "s", "t"))
	})
	t.Run("ConcurrentCommits", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 20 {
					if err := s.Commit(ctx, "s", "t", map[string]string{fmt.Sprintf("k%d_%d", i, j): "v"}); err != nil {
						t.Error(err)
					}
					if _, err := s.Load(ctx, "s", "t"); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		if n := len(load(t, s, "s", "t")); n != 160 {
			t.Errorf("%d keys after 160 concurrent commits of one key each", n)
		}
	})
}

// Recorder is a tool that records its calls and answers each with a fixed
// result (by default the text "ok"). It is safe for concurrent use.
type Recorder struct {
	spec tool.Spec

	mu     sync.Mutex
	calls  []tool.Call
	result func(call *tool.Call) (*tool.Result, error)
}

// NewRecorder returns a Recorder named name, taking any object as
// arguments. A nil ann leaves it unannotated.
func NewRecorder(name string, ann *tool.Annotations) *Recorder {
	return &Recorder{spec: tool.Spec{
		Name:        name,
		Description: "Records its calls.",
		Schema:      json.RawMessage(`{"type":"object"}`),
		Annotations: ann,
	}}
}

// Answer sets how the Recorder answers calls from now on.
func (r *Recorder) Answer(fn func(call *tool.Call) (*tool.Result, error)) {
	r.mu.Lock()
	r.result = fn
	r.mu.Unlock()
}

// Spec returns the Recorder's spec.
func (r *Recorder) Spec() tool.Spec { return r.spec }

// Call records call and answers it.
func (r *Recorder) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	r.mu.Lock()
	c := *call
	c.Args = append(json.RawMessage(nil), call.Args...)
	r.calls = append(r.calls, c)
	fn := r.result
	r.mu.Unlock()
	if fn == nil {
		return tool.Text("ok"), nil
	}
	res, err := fn(call)
	if res != nil && res.Meta != nil {
		res.Meta = maps.Clone(res.Meta)
	}
	return res, err
}

// Calls returns the calls received so far, in order.
func (r *Recorder) Calls() []tool.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tool.Call(nil), r.calls...)
}

// Subjects returns, by tool name, the Subject each of tools declares for
// a call with the arguments args holds under its name (tool.SubjectOf).
// A tool with no arguments in args fails the test, so a tool added to a
// set is not left out of the check unseen.
func Subjects(t testing.TB, tools []tool.Tool, args map[string]string) map[string]tool.Subject {
	t.Helper()
	got := make(map[string]tool.Subject, len(tools))
	for _, tl := range tools {
		name := tl.Spec().Name
		a, ok := args[name]
		if !ok {
			t.Errorf("tooltest: no arguments for tool %s; add them to the test's map", name)
			continue
		}
		got[name] = tool.SubjectOf(tl, json.RawMessage(a))
	}
	return got
}
