package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

func TestDeniedPromptAddsNoContext(t *testing.T) {
	settings := `{"hooks":{"UserPromptSubmit":[{"hooks":[
		{"type":"command","command":"cat >/dev/null; echo context from the first"},
		{"type":"command","command":"cat >/dev/null; echo '{\"decision\":\"block\",\"reason\":\"not today\"}'"}]}]}}`
	r := newRunner(t, settings, nil)
	out, err := hook.Prompt.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.PromptInput{Parts: []llm.Part{&llm.Text{Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Denied == nil || out.Denied.Reason != "not today" {
		t.Errorf("outcome = %+v, want a deny with the JSON reason", out)
	}
	if n := r.Notices(); n != nil {
		t.Errorf("a denied prompt queued context %q", n)
	}
}

func TestStopHookInputAndContinueFalse(t *testing.T) {
	settings := settingsJSON(t, "Stop", "", `in=$(cat); case "$in" in *'"stop_hook_active":false'*'"last_assistant_message":"all done"'*) echo '{"continue":false,"stopReason":"reviewed"}';; *) echo "unexpected input: $in" >&2; exit 2;; esac`)
	r := newRunner(t, settings, nil)
	out, err := hook.Finalize.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.FinalizeInput{
		Scope:   hook.Scope{Session: "s", Turn: "t1"},
		Message: &llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "all done"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop == nil || out.Stop.Reason != "reviewed" || out.Nudge != nil {
		t.Errorf("outcome = %+v (nudge %+v), want a stop", out, out.Nudge)
	}
}

func TestPostToolUseBlockIsFeedback(t *testing.T) {
	settings := settingsJSON(t, "PostToolUse", "Write", `cat >/dev/null; echo '{"decision":"block","reason":"lint failed: missing newline"}'`)
	r := newRunner(t, settings, nil)
	out, err := hook.ToolResult.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.ToolResultInput{
		Call: llm.ToolCall{ID: "c", Name: "write", Args: json.RawMessage(`{"path":"a"}`)}, Result: tool.Text("ok"), Outcome: "execute",
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.TextOf() != "ok" {
		t.Errorf("the result was changed: %q", out.Result.TextOf())
	}
	if diff := cmp.Diff([]string{"PostToolUse hook on write: lint failed: missing newline"}, r.Notices()); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	// A call that never ran gets no post hook.
	if _, err := hook.ToolResult.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.ToolResultInput{
		Call: llm.ToolCall{ID: "d", Name: "write"}, Result: tool.Text("x"), Outcome: "substitute",
	}); err != nil || r.Notices() != nil {
		t.Errorf("a substituted call ran the post hook (err %v)", err)
	}
}

func TestPreToolUseContinueFalseStopsAtStepEnd(t *testing.T) {
	settings := settingsJSON(t, "PreToolUse", "", `cat >/dev/null; echo '{"continue":false,"stopReason":"maintenance window"}'`)
	r := newRunner(t, settings, nil)
	chain := hook.Join(r.Hooks(), nil)
	scope := hook.Scope{Session: "s", Turn: "t1"}
	g, err := hook.PreToolUse.Run(context.Background(), chain, &hook.ToolInput{Scope: scope, Call: llm.ToolCall{ID: "c", Name: "shell"}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Denied == nil || g.Denied.Reason != "maintenance window" {
		t.Errorf("gate = %+v, want the call denied with the stop reason", g)
	}
	other, _ := hook.StepEnd.Run(context.Background(), chain, &hook.StepEndInput{Scope: hook.Scope{Session: "s", Turn: "t2"}})
	if other.Stop != nil {
		t.Error("another turn was stopped")
	}
	se, err := hook.StepEnd.Run(context.Background(), chain, &hook.StepEndInput{Scope: scope})
	if err != nil || se.Stop == nil || se.Stop.Reason != "maintenance window" {
		t.Errorf("step end = %+v, %v; want a stop", se, err)
	}
	again, _ := hook.StepEnd.Run(context.Background(), chain, &hook.StepEndInput{Scope: scope})
	if again.Stop != nil {
		t.Error("the stop was applied twice")
	}
}

func TestCancelKillsTheHook(t *testing.T) {
	r := newRunner(t, settingsJSON(t, "PreToolUse", "", "sleep 30"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := hook.PreToolUse.Run(ctx, hook.Join(r.Hooks(), nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c", Name: "shell"}})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
	var he *hook.Error
	if !errors.As(err, &he) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want a hook.Error wrapping context.Canceled", err)
	}
}

func TestReinEntriesSeeTheFormatsToolNames(t *testing.T) {
	settings := settingsJSON(t, "PreToolUse", "Bash", `in=$(cat); case "$in" in *'"tool_name":"Bash"'*) exit 0;; esac; echo "got $in" >&2; exit 2`)
	r := newRunner(t, settings, nil)
	g, err := hook.PreToolUse.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c", Name: "shell", Args: json.RawMessage(`{"command":"ls"}`)}})
	if err != nil || g.Denied != nil {
		t.Errorf("gate = %+v, %v; an entry of rein's settings is told the format's tool name too", g, err)
	}
}

func TestMissingShellFailsClosed(t *testing.T) {
	r := newRunner(t, settingsJSON(t, "PreToolUse", "", "true"), &command.Options{Shell: "/nonexistent/sh"})
	_, err := hook.PreToolUse.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c", Name: "shell"}})
	var he *hook.Error
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "/nonexistent/sh") {
		t.Errorf("err = %v, want a hook.Error naming the shell", err)
	}
}
