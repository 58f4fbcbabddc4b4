package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

// rig is an agent with real file tools over a temporary workspace, a
// scripted model and the hooks of one settings file.
type rig struct {
	dir     string
	model   *llmtest.Model
	agent   *agent.Agent
	runner  *command.Runner
	mu      sync.Mutex
	reports []command.Report
}

func newRig(t *testing.T, settings string, opts *command.Options, script ...llmtest.Entry) *rig {
	t.Helper()
	dir := t.TempDir()
	entries, err := command.Parse([]byte(settings), ".rein/settings.json", false)
	if err != nil {
		t.Fatal(err)
	}
	return newRigEntries(t, dir, entries, opts, script...)
}

func newRigEntries(t *testing.T, dir string, entries []command.Entry, opts *command.Options, script ...llmtest.Entry) *rig {
	t.Helper()
	r := &rig{dir: dir, model: llmtest.NewModel(script...)}
	o := command.Options{}
	if opts != nil {
		o = *opts
	}
	o.Dir = dir
	o.OnReport = func(rep command.Report) {
		r.mu.Lock()
		r.reports = append(r.reports, rep)
		r.mu.Unlock()
	}
	var err error
	r.runner, err = command.New(entries, &o)
	if err != nil {
		t.Fatal(err)
	}
	r.agent, err = agent.New(&agent.Options{
		Model:   r.model,
		Tools:   fs.NewTools(&sandbox.Policy{Root: dir}, nil),
		Hooks:   r.runner.Hooks(),
		Notices: r.runner.Notices,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.agent.Close() })
	return r
}

func (r *rig) run(t *testing.T, prompt string) *agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, _ := r.agent.Run(ctx, &agent.RunRequest{Prompt: prompt})
	if res == nil {
		t.Fatal("no result")
	}
	return res
}

func (r *rig) decisions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rep := range r.reports {
		out = append(out, rep.Event+" "+rep.Decision)
	}
	return out
}

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func settingsJSON(t *testing.T, event, matcher string, commands ...string) string {
	t.Helper()
	var hs []map[string]any
	for _, c := range commands {
		h := map[string]any{"type": "command", "command": c}
		if strings.HasPrefix(c, "timeout=") {
			secs, rest, _ := strings.Cut(strings.TrimPrefix(c, "timeout="), " ")
			var f float64
			json.Unmarshal([]byte(secs), &f)
			h = map[string]any{"type": "command", "command": rest, "timeout": f}
		}
		hs = append(hs, h)
	}
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{map[string]any{"matcher": matcher, "hooks": hs}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolResults returns the text of every tool.result event of a run.
func toolResults(res *agent.Result) []string {
	var out []string
	for _, ev := range res.Events {
		if tr, ok := ev.Data.(*session.ToolResult); ok {
			var b strings.Builder
			for _, p := range tr.Parts {
				if t, ok := p.(*llm.Text); ok {
					b.WriteString(t.Text)
				}
			}
			out = append(out, tr.Outcome+"|"+tr.Code+"|"+b.String())
		}
	}
	return out
}

// hookEvents lists the loop's hook.decision events: the combined decision
// of a point's chain (per-command reports are left to commandReports).
func hookEvents(res *agent.Result) []string {
	var out []string
	for _, ev := range res.Events {
		if d, ok := ev.Data.(*session.HookDecision); ok && len(d.Detail) == 0 {
			out = append(out, d.Point+" "+d.Decision+" "+d.Reason)
		}
	}
	return out
}

// commandReport is what the log says of one command run.
type commandReport struct {
	Point, Hook, Decision, Reason string
	Event                         string `json:"event"`
	Command                       string `json:"command"`
	ExitCode                      int    `json:"exit_code"`
	DurationMS                    int64  `json:"duration_ms"`
}

// commandReports lists the hook.decision events that carry a command's
// own report (its command, exit code and duration in Detail).
func commandReports(t *testing.T, res *agent.Result) []commandReport {
	t.Helper()
	var out []commandReport
	for _, ev := range res.Events {
		d, ok := ev.Data.(*session.HookDecision)
		if !ok || len(d.Detail) == 0 {
			continue
		}
		var c commandReport
		if err := json.Unmarshal(d.Detail, &c); err != nil {
			t.Fatalf("detail of %s: %v", d.Hook, err)
		}
		c.Point, c.Hook, c.Decision, c.Reason = d.Point, d.Hook, d.Decision, d.Reason
		out = append(out, c)
	}
	return out
}

// lastRequestText is every text of the last request the model got.
func lastRequestText(m *llmtest.Model) string {
	reqs := m.Requests()
	if len(reqs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, msg := range reqs[len(reqs)-1].Messages {
		for _, p := range msg.Parts {
			switch p := p.(type) {
			case *llm.Text:
				b.WriteString(p.Text + "\n")
			case *llm.ToolResult:
				for _, q := range p.Parts {
					if t, ok := q.(*llm.Text); ok {
						b.WriteString(t.Text + "\n")
					}
				}
			}
		}
	}
	return b.String()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestPreToolUseExit2DeniesWrite(t *testing.T) {
	r := newRig(t, settingsJSON(t, "PreToolUse", "Write", `echo "writes are frozen" >&2; exit 2`), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	res := r.run(t, "write a.txt")
	if exists(filepath.Join(r.dir, "a.txt")) {
		t.Fatal("a.txt was written despite the hook's exit 2")
	}
	if diff := cmp.Diff([]string{"gate-block|BLOCKED|Blocked: writes are frozen"}, toolResults(res)); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if !strings.Contains(lastRequestText(r.model), "Blocked: writes are frozen") {
		t.Errorf("the model did not see the block reason:\n%s", lastRequestText(r.model))
	}
	if got := hookEvents(res); len(got) != 1 || !strings.HasPrefix(got[0], "pre-tool-use deny writes are frozen") {
		t.Errorf("hook.decision events = %q, want one pre-tool-use deny", got)
	}
	reps := commandReports(t, res)
	if len(reps) != 1 {
		t.Fatalf("command reports on the log = %+v, want one", reps)
	}
	if c := reps[0]; c.Event != "PreToolUse" || c.ExitCode != 2 || c.Decision != "deny" || !strings.Contains(c.Command, "exit 2") || !strings.Contains(c.Reason, "writes are frozen") {
		t.Errorf("command report = %+v, want the command, exit 2, deny and its reason", c)
	}
}

func TestPreToolUseJSONDeny(t *testing.T) {
	body := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no writes to secrets"}}'`
	r := newRig(t, settingsJSON(t, "PreToolUse", "write|edit", body), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	res := r.run(t, "go")
	if exists(filepath.Join(r.dir, "a.txt")) {
		t.Fatal("file written despite permissionDecision deny")
	}
	if diff := cmp.Diff([]string{"gate-block|BLOCKED|Blocked: no writes to secrets"}, toolResults(res)); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
}

func TestPreToolUseUpdatedInputMovesFile(t *testing.T) {
	// The hook reads Claude's spelling (file_path) and answers with it.
	body := `in=$(cat); case "$in" in *'"file_path":"a.txt"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"moved/b.txt"}}}';; esac`
	r := newRig(t, settingsJSON(t, "PreToolUse", "Write", body), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	res := r.run(t, "go")
	if exists(filepath.Join(r.dir, "a.txt")) {
		t.Error("a.txt written: the edit was not applied")
	}
	got, err := os.ReadFile(filepath.Join(r.dir, "moved", "b.txt"))
	if err != nil || string(got) != "hi" {
		t.Fatalf("moved/b.txt = %q, %v; want the content at the edited path (results %q)", got, err, toolResults(res))
	}
	if ev := hookEvents(res); len(ev) != 1 || !strings.HasPrefix(ev[0], "pre-tool-use edit") {
		t.Errorf("hook.decision events = %q, want one edit", ev)
	}
}

func TestPreToolUseUpdatedInputBreakingSchemaIsRejected(t *testing.T) {
	body := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":{"dir":"x"}}}}'`
	r := newRig(t, settingsJSON(t, "PreToolUse", "", body), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	res := r.run(t, "go")
	if exists(filepath.Join(r.dir, "a.txt")) {
		t.Fatal("the call ran despite an invalid edit")
	}
	got := toolResults(res)
	if len(got) != 1 || !strings.HasPrefix(got[0], "invalid-input|") {
		t.Errorf("tool results = %q, want one invalid-input result", got)
	}
}

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

func TestHookTimeoutFailsClosed(t *testing.T) {
	r := newRig(t, settingsJSON(t, "PreToolUse", "*", "timeout=0.3 sleep 30"), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	start := time.Now()
	res := r.run(t, "go")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %v; the hung hook was not killed", d)
	}
	if exists(filepath.Join(r.dir, "a.txt")) {
		t.Fatal("the call ran although its gate timed out")
	}
	got := toolResults(res)
	if len(got) != 1 || !strings.Contains(got[0], "timed out") || !strings.Contains(got[0], agent.CodeHookError) {
		t.Errorf("tool results = %q, want a hook error naming the timeout", got)
	}
	if d := r.decisions(); len(d) != 1 || d[0] != "PreToolUse error" {
		t.Errorf("reports = %q", d)
	}
}

func TestExit1IsNonBlocking(t *testing.T) {
	r := newRig(t, settingsJSON(t, "PreToolUse", "Write", `echo "linter missing" >&2; exit 1`), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	res := r.run(t, "go")
	if !exists(filepath.Join(r.dir, "a.txt")) {
		t.Fatal("exit 1 blocked the call; it must not")
	}
	if res.Reason != session.EndCompleted {
		t.Errorf("end = %q", res.Reason)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) != 1 || r.reports[0].Decision != "error" || r.reports[0].ExitCode != 1 || !strings.Contains(r.reports[0].Reason, "linter missing") {
		t.Errorf("reports = %+v, want one non-blocking error with exit 1", r.reports)
	}
	// The error is on the session log too, not only shown.
	if reps := commandReports(t, res); len(reps) != 1 || reps[0].Decision != "error" || reps[0].ExitCode != 1 || !strings.Contains(reps[0].Reason, "linter missing") {
		t.Errorf("command reports on the log = %+v, want the non-blocking error with exit 1", reps)
	}
}

func TestPostToolUseAdditionalContextReachesNextRequest(t *testing.T) {
	body := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted a.txt with prettier"}}'`
	r := newRig(t, settingsJSON(t, "PostToolUse", "Edit|Write", body), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	res := r.run(t, "go")
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
	if in["hook_event_name"] != "PostToolUseFailure" || in["tool_name"] != "read" || in["error"] == "" || in["error"] == nil {
		t.Errorf("input = %v", in)
	}
}

func TestContinueFalseEndsTheTurn(t *testing.T) {
	body := `cat >/dev/null; echo '{"continue":false,"stopReason":"budget reached"}'`
	r := newRig(t, settingsJSON(t, "PostToolUse", "", body), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("never"))
	res := r.run(t, "go")
	if r.model.Calls() != 1 {
		t.Errorf("model calls = %d, want 1: the turn should end after the step", r.model.Calls())
	}
	if !exists(filepath.Join(r.dir, "a.txt")) {
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

func TestPermissionAllowAndAsk(t *testing.T) {
	tests := []struct {
		name    string
		answers []string // permissionDecision of each parallel hook
		written bool
	}{
		{"allow", []string{"allow"}, true},
		{"ask with no approver is denied", []string{"ask"}, false},
		{"ask wins over allow", []string{"allow", "ask"}, false},
		{"deny wins over ask and allow", []string{"allow", "deny", "ask"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cmds []string
			for i, a := range tt.answers {
				// Distinct commands: identical ones run once.
				cmds = append(cmds, `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"`+a+`","permissionDecisionReason":"r`+string(rune('0'+i))+`"}}'`)
			}
			r := newRig(t, settingsJSON(t, "PreToolUse", "", cmds...), nil,
				llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
				llmtest.Reply("ok"))
			res := r.run(t, "go")
			if got := exists(filepath.Join(r.dir, "a.txt")); got != tt.written {
				t.Errorf("written = %v, want %v (results %q, decisions %q)", got, tt.written, toolResults(res), hookEvents(res))
			}
		})
	}
}

func TestEditsApplyInConfigurationOrder(t *testing.T) {
	// Both hooks run in parallel on the original input; their edits are
	// merged in the order they are configured, the later winning.
	first := `cat >/dev/null; sleep 0.2; echo '{"hookSpecificOutput":{"updatedInput":{"path":"first.txt","content":"one"}}}'`
	second := `cat >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"path":"second.txt"}}}'`
	r := newRig(t, settingsJSON(t, "PreToolUse", "Write", first, second), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	start := time.Now()
	r.run(t, "go")
	b, err := os.ReadFile(filepath.Join(r.dir, "second.txt"))
	if err != nil || string(b) != "one" {
		t.Errorf("second.txt = %q, %v; want the merged edit (content from the first, path from the second)", b, err)
	}
	if exists(filepath.Join(r.dir, "first.txt")) || exists(filepath.Join(r.dir, "a.txt")) {
		t.Error("a file landed at a path the later edit replaced")
	}
	_ = start
}

func TestHooksRunInParallel(t *testing.T) {
	slow := func(i int) string { return "cat >/dev/null; sleep 0.5 # " + string(rune('a'+i)) }
	r := newRig(t, settingsJSON(t, "PreToolUse", "", slow(0), slow(1), slow(2), slow(3)), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("ok"))
	start := time.Now()
	r.run(t, "go")
	if d := time.Since(start); d > 1800*time.Millisecond {
		t.Errorf("four 0.5 s hooks took %v; they should run in parallel", d)
	}
	if n := len(r.decisions()); n != 4 {
		t.Errorf("reports = %d, want 4", n)
	}
}
