package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type errStore struct{ StateStore }

func (errStore) Commit(context.Context, string, string, map[string]string) error {
	return errors.New("disk full")
}

func TestB15_Run(t *testing.T) {
	tests := []struct {
		name      string
		fn        func(ctx context.Context, call *Call) (*Result, error)
		want      string
		wantError bool
	}{
		{"result", func(ctx context.Context, call *Call) (*Result, error) { return Text("fine"), nil }, "fine", false},
		{"error result passes through", func(ctx context.Context, call *Call) (*Result, error) { return Errorf("no such file"), nil }, "no such file", true},
		{"error", func(ctx context.Context, call *Call) (*Result, error) { return nil, errors.New("disk on fire") }, "Tool error: disk on fire", true},
		{"panic", func(ctx context.Context, call *Call) (*Result, error) { panic("boom") }, "Tool error: panic: boom", true},
		{"nil result", func(ctx context.Context, call *Call) (*Result, error) { return nil, nil }, "", false},
		{"nil progress is safe", func(ctx context.Context, call *Call) (*Result, error) {
			call.Progress(Progress{Message: "half", Done: 0.5})
			return Text("done"), nil
		}, "done", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), &Func{ToolSpec: Spec{Name: "t"}, Fn: tt.fn}, &Call{Name: "t"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.TextOf() != tt.want || res.IsError != tt.wantError {
				t.Errorf("Run = %q (error %v), want %q (error %v)", res.TextOf(), res.IsError, tt.want, tt.wantError)
			}
		})
	}
	res, _ := Run(context.Background(), &Func{ToolSpec: Spec{Name: "t"}, Fn: func(context.Context, *Call) (*Result, error) { panic(errors.New("bad")) }}, &Call{})
	var perr *PanicError
	if err, _ := res.Meta[MetaError].(error); !errors.As(err, &perr) || !strings.Contains(string(perr.Stack), "run_test.go") {
		t.Errorf("panic not kept for the host: %v", res.Meta[MetaError])
	}
	sentinel := errors.New("disk on fire")
	res, _ = Run(context.Background(), &Func{ToolSpec: Spec{Name: "t"}, Fn: func(context.Context, *Call) (*Result, error) { return nil, sentinel }}, &Call{})
	if err, _ := res.Meta[MetaError].(error); err != sentinel {
		t.Errorf("Meta[MetaError] = %v, want the tool's error", res.Meta[MetaError])
	}
}

func TestRunState(t *testing.T) {
	ctx := context.Background()
	store := NewMemStateStore()
	if err := store.Commit(ctx, "s1", "counter", map[string]string{"n": "1", "old": "x"}); err != nil {
		t.Fatal(err)
	}
	bump := func(fail string) *Func {
		return &Func{ToolSpec: Spec{Name: "counter"}, Fn: func(ctx context.Context, call *Call) (*Result, error) {
			n, _ := call.State.Get("n")
			call.State.Set("n", n+"1")
			call.State.Set("old", "")
			if got, ok := call.State.Get("n"); !ok || got != n+"1" {
				t.Errorf("staged write not visible to the call: %q", got)
			}
			if _, ok := call.State.Get("old"); ok {
				t.Error("staged removal not visible to the call")
			}
			switch fail {
			case "error":
				return nil, errors.New("failed")
			case "panic":
				panic("failed")
			case "error result":
				return Errorf("failed"), nil
			}
			return Text(n), nil
		}}
	}
	for _, fail := range []string{"error", "panic", "error result"} {
		st, err := LoadState(ctx, store, "s1", "counter")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(ctx, bump(fail), &Call{Session: "s1", State: st}); err != nil {
			t.Fatal(err)
		}
		got, _ := store.Load(ctx, "s1", "counter")
		if diff := cmp.Diff(map[string]string{"n": "1", "old": "x"}, got); diff != "" {
			t.Errorf("%s: state changed by a failed call (-want +got):\n%s", fail, diff)
		}
	}
	st, _ := LoadState(ctx, store, "s1", "counter")
	if _, err := Run(ctx, bump(""), &Call{Session: "s1", State: st}); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Load(ctx, "s1", "counter")
	if diff := cmp.Diff(map[string]string{"n": "11"}, got); diff != "" {
		t.Errorf("state after a successful call (-want +got):\n%s", diff)
	}
	other, _ := store.Load(ctx, "s2", "counter")
	if len(other) != 0 {
		t.Errorf("another session sees the state: %v", other)
	}
	// A commit that fails is rein's failure, reported as an error.
	st, _ = LoadState(ctx, errStore{store}, "s1", "counter")
	if _, err := Run(ctx, bump(""), &Call{Session: "s1", State: st}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Run with a failing store = %v, want the commit error", err)
	}
}

func TestStagedStateAfterSettle(t *testing.T) {
	ctx := context.Background()
	store := NewMemStateStore()
	st, _ := LoadState(ctx, store, "s", "t")
	st.Set("a", "1")
	if err := st.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	st.Set("a", "2") // after commit: ignored
	if err := st.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Load(ctx, "s", "t")
	if diff := cmp.Diff(map[string]string{"a": "1"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got["a"] = "mutated"
	again, _ := store.Load(ctx, "s", "t")
	if again["a"] != "1" {
		t.Error("Load returned the store's own map")
	}
}

func TestErrorOf(t *testing.T) {
	ctx := context.Background()
	run := func(fn func(ctx context.Context, call *Call) (*Result, error)) *Result {
		t.Helper()
		res, err := Run(ctx, &Func{ToolSpec: Spec{Name: "t"}, Fn: fn}, &Call{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	cancelled := run(func(context.Context, *Call) (*Result, error) {
		return nil, fmt.Errorf("waiting for the server: %w", context.Canceled)
	})
	if err := ErrorOf(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("ErrorOf(cancelled) = %v, want one that is context.Canceled", err)
	}
	var perr *PanicError
	if errors.As(ErrorOf(cancelled), &perr) {
		t.Error("a returned error reads as a panic")
	}
	panicked := run(func(context.Context, *Call) (*Result, error) { panic("boom") })
	if err := ErrorOf(panicked); !errors.As(err, &perr) || perr.Value != "boom" || len(perr.Stack) == 0 {
		t.Errorf("ErrorOf(panicked) = %v, want a *PanicError with its stack", err)
	}
	for name, res := range map[string]*Result{
		"result":       run(func(context.Context, *Call) (*Result, error) { return Text("ok"), nil }),
		"error result": run(func(context.Context, *Call) (*Result, error) { return Errorf("no such file"), nil }),
		"nil result":   run(func(context.Context, *Call) (*Result, error) { return nil, nil }),
		"nil":          nil,
	} {
		if err := ErrorOf(res); err != nil {
			t.Errorf("ErrorOf(%s) = %v, want nil", name, err)
		}
	}
}

// A call that did its work keeps its state although its context ends as
// it returns.
func TestRunCommitsAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	store := NewMemStateStore()
	st, err := LoadState(ctx, store, "s1", "t")
	if err != nil {
		t.Fatal(err)
	}
	f := &Func{ToolSpec: Spec{Name: "t"}, Fn: func(ctx context.Context, call *Call) (*Result, error) {
		call.State.Set("done", "yes")
		cancel()
		return Text("done"), nil
	}}
	if _, err := Run(ctx, f, &Call{Session: "s1", State: st}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, _ := store.Load(context.Background(), "s1", "t")
	if diff := cmp.Diff(map[string]string{"done": "yes"}, got); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}
