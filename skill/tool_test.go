package skill_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/skill"
	"github.com/reinhq/rein/tool"
)

// TestToolActivatesReadsAndDeactivates: the model's tool loads a body,
// then a file on request, then ends the skill; its failures are results
// the model can act on.
func TestToolActivatesReadsAndDeactivates(t *testing.T) {
	lib, _ := activationTree(t)
	act := skill.NewActivator(lib, nil)
	st, err := act.Tool()
	if err != nil {
		t.Fatal(err)
	}
	if sp := st.Spec(); sp.Name != skill.ToolName || sp.Annotations == nil || !sp.Annotations.ReadOnly {
		t.Fatalf("spec = %+v", sp)
	}
	call := func(args string) *tool.Result {
		t.Helper()
		res, err := tool.Run(context.Background(), st, &tool.Call{ID: "c", Name: skill.ToolName, Args: []byte(args), Session: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	steps := []struct {
		args, want string
		isErr      bool
	}{
		{`{"name":"pdf","path":"reference.md"}`, "not active", true},
		{`{"name":"pdf"}`, "Read reference.md, then run scripts/fill.py.", false},
		{`{"name":"pdf","path":"reference.md"}`, "FIELD NAMES: a, b, c", false},
		{`{"name":"pdf","path":"../notes/SKILL.md"}`, "outside the skill's folder", true},
		{`{"name":"pdf","deactivate":true}`, "deactivated", false},
		{`{"name":"pdf","path":"reference.md"}`, "not active", true},
		{`{"name":"missing"}`, "no skill of that name", true},
		{`{}`, "name", true},
	}
	for _, s := range steps {
		res := call(s.args)
		if got := res.TextOf(); !strings.Contains(got, s.want) || res.IsError != s.isErr {
			t.Errorf("%s: %q (error %v), want %q (error %v)", s.args, got, res.IsError, s.want, s.isErr)
		}
	}
	if n := len(act.Records("s")); n != 2 {
		t.Errorf("%d records, want an activation and a deactivation", n)
	}
}
