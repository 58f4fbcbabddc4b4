package fs

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/tooltest"
)

// Every filesystem tool declares the path it acts on, so approval rules
// scoped to a path cover its calls.
func TestToolsDeclareTheirPath(t *testing.T) {
	ts := NewTools(&sandbox.Policy{Root: t.TempDir()}, nil)
	got := tooltest.Subjects(t, ts, map[string]string{
		"read":       `{"path":"src/a.go","offset":2,"limit":10}`,
		"write":      `{"path":"src/a.go","content":"package a\n"}`,
		"edit":       `{"path":"src/a.go","old_string":"a","new_string":"b"}`,
		"multi_edit": `{"path":"src/a.go","edits":[{"old_string":"a","new_string":"b"}]}`,
		"ls":         `{"path":"src/a.go"}`,
		"glob":       `{"pattern":"**/*.go","path":"src/a.go"}`,
		"grep":       `{"pattern":"func","path":"src/a.go","output":"content"}`,
	})
	want := map[string]tool.Subject{}
	for _, tl := range ts {
		want[tl.Spec().Name] = tool.Subject{Path: "src/a.go"}
		// A call left to the default directory names no path.
		if s := tool.SubjectOf(tl, json.RawMessage(`{"pattern":"x"}`)); s != (tool.Subject{}) {
			t.Errorf("%s without a path: Subject = %+v, want none", tl.Spec().Name, s)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
}
