package tool_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/tool"
)

type declared struct {
	tool.Tool
	rerun bool
}

func (d declared) Rerunnable() bool { return d.rerun }

// wrapped hides what it wraps but for Unwrap.
type wrapped struct{ tool.Tool }

func (w wrapped) Unwrap() tool.Tool { return w.Tool }

func TestRerunnable(t *testing.T) {
	fn := func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil }
	mk := func(a *tool.Annotations) tool.Tool {
		return &tool.Func{ToolSpec: tool.Spec{Name: "t", Annotations: a}, Fn: fn}
	}
	for _, tc := range []struct {
		name string
		t    tool.Tool
		want bool
	}{
		{"unannotated", mk(nil), false},
		{"read-only", mk(&tool.Annotations{ReadOnly: true}), true},
		{"idempotent alone", mk(&tool.Annotations{Idempotent: true, Destructive: true}), false},
		{"declared", declared{mk(nil), true}, true},
		{"declared not, though read-only", declared{mk(&tool.Annotations{ReadOnly: true}), false}, false},
		{"declared under a wrapper", wrapped{declared{mk(nil), true}}, true},
		{"read-only under a wrapper", wrapped{mk(&tool.Annotations{ReadOnly: true})}, true},
	} {
		if got := tool.Rerunnable(tc.t); got != tc.want {
			t.Errorf("%s: Rerunnable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
