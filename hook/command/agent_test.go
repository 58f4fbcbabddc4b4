package command_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

func TestUserPromptSubmitDenyMakesNoRequest(t *testing.T) {
	body := `if grep -q password; then echo "prompt mentions a password" >&2; exit 2; fi`
	r := newRig(t, settingsJSON(t, "UserPromptSubmit", "", body), nil, llmtest.Reply("never"))
	res := r.run(t, "here is my password: hunter2")
	if res.Reason != session.EndBlocked {
		t.Errorf("end reason = %q, want blocked", res.Reason)
	}
	if n := r.model.Calls(); n != 0 {
		t.Errorf("model got %d requests, want 0", n)
	}
	var blocked string
	for _, ev := range res.Events {
		if pb, ok := ev.Data.(*session.PromptBlocked); ok {
			blocked = pb.Reason
		}
	}
	if blocked != "prompt mentions a password" {
		t.Errorf("prompt.blocked reason = %q", blocked)
	}
	// A harmless prompt passes, and its plain stdout would be context.
	r2 := newRig(t, settingsJSON(t, "UserPromptSubmit", "", `cat >/dev/null; echo "today is a holiday"`), nil, llmtest.Reply("fine"))
	if res := r2.run(t, "hello"); res.Reason != session.EndCompleted {
		t.Errorf("end reason = %q, want completed", res.Reason)
	}
	if !strings.Contains(lastRequestText(r2.model), "today is a holiday") {
		t.Errorf("prompt hook context missing from the request:\n%s", lastRequestText(r2.model))
	}
}

func TestStopHookBlocksOnceThenAllows(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "stop.log")
	body := `in=$(cat); case "$in" in *'"stop_hook_active":true'*) echo second >>` + log + `; exit 0;; esac; echo first >>` + log + `; echo "run the tests first" >&2; exit 2`
	r := newRig(t, settingsJSON(t, "Stop", "", body), nil,
		llmtest.Reply("done"),
		llmtest.Reply("tests pass, done"))
	res := r.run(t, "fix it")
	if res.Reason != session.EndCompleted || res.Text != "tests pass, done" {
		t.Errorf("result = %q %q, want completed with the second answer", res.Reason, res.Text)
	}
	if n := r.model.Calls(); n != 2 {
		t.Errorf("model calls = %d, want 2 finalize rounds", n)
	}
	b, _ := os.ReadFile(log)
	if diff := cmp.Diff("first\nsecond\n", string(b)); diff != "" {
		t.Errorf("stop hook runs (-want +got):\n%s", diff)
	}
	if !strings.Contains(lastRequestText(r.model), "run the tests first") {
		t.Error("the nudge did not reach the model")
	}
	if diff := cmp.Diff([]string{"finalize nudge "}, hookEvents(res)); diff != "" {
		t.Errorf("hook.decision events (-want +got):\n%s", diff)
	}
}

func TestPostToolUseAdditionalContextReachesNextRequest(t *testing.T) {
	body := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted a.txt with prettier"}}'`
	r, res := writeRun(t, "PostToolUse", "Edit|Write", body)
	reqs := r.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	if !strings.Contains(lastRequestText(r.model), "formatted a.txt with prettier") {
		t.Errorf("second request lacks the hook's context:\n%s", lastRequestText(r.model))
	}
	var ctxs []string
	for _, ev := range res.Events {
		if c, ok := ev.Data.(*session.ContextMessage); ok {
			ctxs = append(ctxs, c.Parts[0].(*llm.Text).Text)
		}
	}
	if diff := cmp.Diff([]string{"formatted a.txt with prettier"}, ctxs); diff != "" {
		t.Errorf("context.message events (-want +got):\n%s", diff)
	}
}

func TestPostToolUseFailureSeesTheError(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "in.json")
	r := newRig(t, settingsJSON(t, "PostToolUseFailure", "", "cat >"+out), nil,
		llmtest.CallTool("c1", "read", `{"path":"missing.txt"}`),
		llmtest.Reply("ok"))
	r.run(t, "go")
	var in map[string]any
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the failure hook did not run: %v", err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if in["hook_event_name"] != "PostToolUseFailure" || in["tool_name"] != "Read" || in["error"] == "" || in["error"] == nil {
		t.Errorf("input = %v", in)
	}
}

func TestContinueFalseEndsTheTurn(t *testing.T) {
	body := `cat >/dev/null; echo '{"continue":false,"stopReason":"budget reached"}'`
	r, res := writeRun(t, "PostToolUse", "", body)
	if r.model.Calls() != 1 {
		t.Errorf("model calls = %d, want 1: the turn should end after the step", r.model.Calls())
	}
	if !r.exists("a.txt") {
		t.Error("the tool should have run before the post hook stopped the turn")
	}
	found := false
	for _, h := range hookEvents(res) {
		if strings.HasPrefix(h, "step-end stop budget reached") {
			found = true
		}
	}
	if !found {
		t.Errorf("no step-end stop decision: %q", hookEvents(res))
	}
}
