package shell

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/tooltest"
)

// The shell tool declares the command line it runs, so approval rules
// scoped to a command prefix cover its calls; the task tools act on a
// task the shell started and declare nothing.
func TestToolsDeclareTheirCommand(t *testing.T) {
	s := New(nil)
	defer s.Close()
	got := tooltest.Subjects(t, s.Tools(), map[string]string{
		"shell":       `{"command":"go test ./...","timeout":30,"description":"run the tests","path":"not/this"}`,
		"task_output": `{"id":"t1"}`,
		"task_kill":   `{"id":"t1"}`,
		"task_wait":   `{"id":"t1"}`,
	})
	want := map[string]tool.Subject{
		"shell":       {Command: "go test ./..."},
		"task_output": {},
		"task_kill":   {},
		"task_wait":   {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
}
