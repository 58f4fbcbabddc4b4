package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
)

// A hook's command gets the trace context of its scope and call as
// TRACEPARENT, over one rein was started with; without one, it keeps
// rein's.
func TestHookCommandsGetTraceParent(t *testing.T) {
	const ours = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const inherited = "00-11111111111111111111111111111111-2222222222222222-01"
	out := filepath.Join(t.TempDir(), "tp")
	settings := settingsJSON(t, "PreToolUse", "", `printf '%s\n' "$TRACEPARENT" >> `+out)
	var asked []string
	for _, known := range []bool{true, false} {
		r := newRunner(t, settings, &command.Options{
			BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "TRACEPARENT=" + inherited},
			TraceParent: func(s hook.Scope, call llm.CallID) string {
				asked = append(asked, string(s.Run)+"/"+string(call))
				if known {
					return ours
				}
				return ""
			},
		})
		in := &hook.ToolInput{Scope: hook.Scope{Session: "s1", Run: "r1"}, Call: llm.ToolCall{ID: "c1", Name: "shell", Args: json.RawMessage(`{}`)}}
		if _, err := hook.PreToolUse.Run(context.Background(), hook.Join(r.Hooks(), nil), in); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), []string{ours, inherited}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("TRACEPARENT seen = %q, want %q", got, want)
	}
	if strings.Join(asked, " ") != "r1/c1 r1/c1" {
		t.Errorf("TraceParent asked for %q, want the hook's run and call", asked)
	}
}
