package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func newRunner(t *testing.T, settings string, opts *command.Options) *command.Runner {
	t.Helper()
	entries, err := command.Parse([]byte(settings), "test.json", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := command.New(entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSecretsNeverReachHooks(t *testing.T) {
	var reports []command.Report
	r := newRunner(t, settingsJSON(t, "PreToolUse", "", `env >&2; echo "key=$ANTHROPIC_API_KEY" >&2; echo "leak sk-ant-secret-value-1" >&2; exit 2`), &command.Options{
		BaseEnv:  []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-secret-value-1", "PLAIN=visible"},
		OnReport: func(rep command.Report) { reports = append(reports, rep) },
	})
	out, err := hook.PreToolUse.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c1", Name: "shell", Args: json.RawMessage(`{"command":"ls"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	deny := out.Denied
	if deny == nil {
		t.Fatalf("outcome = %#v, want a deny", out)
	}
	if strings.Contains(deny.Reason, "sk-ant") || !strings.Contains(deny.Reason, "PLAIN=visible") || !strings.Contains(deny.Reason, "key=\n") {
		t.Errorf("reason leaks or lacks the environment:\n%s", deny.Reason)
	}
	if !strings.Contains(deny.Reason, "leak [redacted]") {
		t.Errorf("the secret's value was not cut from the output:\n%s", deny.Reason)
	}
	if len(reports) != 1 || strings.Contains(reports[0].Stderr, "sk-ant") {
		t.Errorf("reports = %+v", reports)
	}
}

func TestFireSessionEvents(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "in")
	settings := `{"hooks":{
		"SessionStart":[{"hooks":[{"type":"command","command":"cat > ` + capture + `.start; echo 'remember: tabs'"}]}],
		"SessionEnd":[{"hooks":[{"type":"command","command":"cat > ` + capture + `.end"}]}],
		"PreCompact":[{"hooks":[{"type":"command","command":"cat > ` + capture + `.compact; echo keep the plan >&2; exit 2"}]}]}}`
	r := newRunner(t, settings, &command.Options{Dir: dir, Transcript: func(id session.ID) string { return "/logs/" + string(id) + ".ndjson" }})
	ctx := context.Background()
	res, err := r.Fire(ctx, &command.FireRequest{Event: command.SessionStart, Session: "s1", Source: "resume"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&command.FireResult{Context: []string{"remember: tabs"}}, res); diff != "" {
		t.Errorf("SessionStart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"remember: tabs"}, r.Notices()); diff != "" {
		t.Errorf("Notices (-want +got):\n%s", diff)
	}
	if r.Notices() != nil {
		t.Error("Notices did not forget what it returned")
	}
	if _, err := r.Fire(ctx, &command.FireRequest{Event: command.SessionEnd, Session: "s1", Reason: "prompt_input_exit"}); err != nil {
		t.Fatal(err)
	}
	res, err = r.Fire(ctx, &command.FireRequest{Event: command.PreCompact, Session: "s1", Trigger: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Blocked != "keep the plan" {
		t.Errorf("PreCompact blocked = %q", res.Blocked)
	}
	read := func(suffix string) map[string]any {
		b, err := os.ReadFile(capture + suffix)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	want := map[string]any{"session_id": "s1", "transcript_path": "/logs/s1.ndjson", "cwd": dir, "hook_event_name": "SessionStart", "source": "resume"}
	if diff := cmp.Diff(want, read(".start")); diff != "" {
		t.Errorf("SessionStart input (-want +got):\n%s", diff)
	}
	want = map[string]any{"session_id": "s1", "transcript_path": "/logs/s1.ndjson", "cwd": dir, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
	if diff := cmp.Diff(want, read(".end")); diff != "" {
		t.Errorf("SessionEnd input (-want +got):\n%s", diff)
	}
	want = map[string]any{"session_id": "s1", "transcript_path": "/logs/s1.ndjson", "cwd": dir, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
	if diff := cmp.Diff(want, read(".compact")); diff != "" {
		t.Errorf("PreCompact input (-want +got):\n%s", diff)
	}
	if _, err := r.Fire(ctx, &command.FireRequest{Event: command.PreToolUse}); err == nil {
		t.Error("Fire accepted a tool event")
	}
}

func TestPreToolUseInput(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "in.json")
	entries, err := command.Parse([]byte(settingsJSON(t, "PreToolUse", "Read", "cat > "+capture)), ".claude/settings.json", true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := command.New(entries, &command.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	in := &hook.ToolInput{Scope: hook.Scope{Session: "s9", Turn: "turn-1"}, Call: llm.ToolCall{ID: "call_7", Name: "read", Args: json.RawMessage(`{"path":"go.mod"}`)}}
	if _, err := hook.PreToolUse.Run(context.Background(), hook.Join(r.Hooks(), nil), in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"session_id": "s9", "transcript_path": "", "cwd": dir, "hook_event_name": "PreToolUse", "turn": "turn-1",
		"tool_name": "Read", "tool_use_id": "call_7",
		"tool_input": map[string]any{"path": "go.mod", "file_path": "go.mod"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
}

func TestReportPayload(t *testing.T) {
	rep := command.Report{Event: command.PreToolUse, Command: "./guard.sh", Source: ".claude/settings.json", CallID: "c1", ExitCode: 2, Duration: 1500 * 1e6, Decision: "deny", Reason: "no"}
	p := rep.Payload()
	if p.Point != string(hook.PointPreToolUse) || p.Hook != "./guard.sh" || p.Decision != "deny" || p.Reason != "no" || p.CallID != "c1" {
		t.Errorf("payload = %+v", p)
	}
	if diff := cmp.Diff(`{"event":"PreToolUse","command":"./guard.sh","source":".claude/settings.json","exit_code":2,"duration_ms":1500}`, string(p.Detail)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
}

func TestOutputIsBounded(t *testing.T) {
	r := newRunner(t, settingsJSON(t, "PreToolUse", "", `head -c 100000 /dev/zero | tr '\\0' x >&2; exit 2`), &command.Options{MaxOutput: 1000})
	out, err := hook.PreToolUse.Run(context.Background(), hook.Join(r.Hooks(), nil), &hook.ToolInput{Call: llm.ToolCall{ID: "c1", Name: "shell"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Denied == nil || len(out.Denied.Reason) > 1100 || !strings.Contains(out.Denied.Reason, "99000 more bytes cut") {
		t.Errorf("reason is %d bytes: %.200q", len(out.Denied.Reason), out.Denied.Reason)
	}
}
