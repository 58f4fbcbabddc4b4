package tooltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/tooltest"
)

func TestMemStateStore(t *testing.T) {
	tooltest.TestStateStore(t, func(*testing.T) tool.StateStore { return tool.NewMemStateStore() })
}

func TestRecorder(t *testing.T) {
	r := tooltest.NewRecorder("rec", &tool.Annotations{ReadOnly: true})
	res, err := tool.Run(context.Background(), r, &tool.Call{ID: "c1", Args: json.RawMessage(`{"a":1}`)})
	if err != nil || res.TextOf() != "ok" {
		t.Fatalf("default answer: %q %v", res.TextOf(), err)
	}
	r.Answer(func(call *tool.Call) (*tool.Result, error) { return nil, errors.New("nope") })
	res, _ = tool.Run(context.Background(), r, &tool.Call{ID: "c2"})
	if res.TextOf() != "Tool error: nope" {
		t.Errorf("scripted answer: %q", res.TextOf())
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID != "c1" || string(calls[0].Args) != `{"a":1}` || calls[1].ID != "c2" {
		t.Errorf("calls = %+v", calls)
	}
}

// errorsTB records the errors a helper reports instead of failing.
type errorsTB struct {
	testing.TB
	errs []string
}

func (e *errorsTB) Helper() {}
func (e *errorsTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestSubjects(t *testing.T) {
	read := &tool.Func{ToolSpec: tool.Spec{Name: "read"}, SubjectFn: tool.PathSubject}
	other := tooltest.NewRecorder("other", nil)
	tb := &errorsTB{TB: t}
	got := tooltest.Subjects(tb, []tool.Tool{read, other}, map[string]string{"read": `{"path":"a.go"}`})
	if diff := cmp.Diff(map[string]tool.Subject{"read": {Path: "a.go"}}, got); diff != "" {
		t.Errorf("Subjects (-want +got):\n%s", diff)
	}
	want := []string{"tooltest: no arguments for tool other; add them to the test's map"}
	if diff := cmp.Diff(want, tb.errs); diff != "" {
		t.Errorf("errors for a tool left out (-want +got):\n%s", diff)
	}
}
