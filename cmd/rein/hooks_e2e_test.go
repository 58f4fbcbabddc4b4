package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm/llmtest"
)

var (
	hooksWiredOnce sync.Once
	hooksWired     bool
)

// needHooks skips a test when 'rein run' does not run hook commands yet
// (it has no --hooks-from flag).
func needHooks(t *testing.T) {
	t.Helper()
	hooksWiredOnce.Do(func() {
		out, _ := exec.Command(reinBin, "run", "--help").CombinedOutput()
		hooksWired = strings.Contains(string(out), "--hooks-from")
	})
	if !hooksWired {
		t.Skip("rein run does not load hook commands yet (no --hooks-from flag)")
	}
}

// writeSettings writes .rein/settings.json of the workspace with one
// event's hooks.
func (e *env) writeSettings(event, matcher string, hooks ...map[string]any) {
	e.t.Helper()
	b, err := json.MarshalIndent(map[string]any{"hooks": map[string]any{event: []any{map[string]any{"matcher": matcher, "hooks": hooks}}}}, "", "  ")
	if err != nil {
		e.t.Fatal(err)
	}
	e.writeFile(".rein/settings.json", string(b), 0o644)
}

func (e *env) writeFile(rel, body string, mode os.FileMode) string {
	e.t.Helper()
	p := filepath.Join(e.work, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// hookScript writes an executable shell script under .rein/hooks and
// returns a hook entry running it.
func (e *env) hookScript(name, body string, timeout float64) map[string]any {
	e.t.Helper()
	e.writeFile(".rein/hooks/"+name, "#!/bin/sh\n"+body, 0o755)
	h := map[string]any{"type": "command", "command": `"$REIN_PROJECT_DIR"/.rein/hooks/` + name}
	if timeout > 0 {
		h["timeout"] = timeout
	}
	return h
}

// events runs rein with --json and returns the printed events' types and data.
type jsonEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func parseEvents(t *testing.T, stdout string) []jsonEvent {
	t.Helper()
	var out []jsonEvent
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var ev jsonEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not an event: %q", line)
		}
		out = append(out, ev)
	}
	return out
}

func eventsOf(evs []jsonEvent, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev.Type == typ {
			var m map[string]any
			json.Unmarshal(ev.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

var anthropicWire = wires[0]

func TestHooksPreToolUseExit2BlocksWrite(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("PreToolUse", "Write", e.hookScript("guard.sh", `echo "writes are frozen during the release" >&2; exit 2`+"\n", 0))
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi"}`),
		llmtest.Reply("I could not write."),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "--json", "write a.txt")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.work, "a.txt")); err == nil {
		t.Fatal("a.txt was written despite the hook")
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if got := toolResultText(reqs[1], "call_1"); got != "Blocked: writes are frozen during the release" {
		t.Errorf("the model saw %q", got)
	}
	// One event is the chain's decision; the other is the command's own
	// report, with the command, its exit code and its duration.
	var chain, report []map[string]any
	for _, d := range eventsOf(parseEvents(t, r.stdout), "hook.decision") {
		if d["detail"] == nil {
			chain = append(chain, d)
		} else {
			report = append(report, d)
		}
	}
	if len(chain) != 1 || chain[0]["decision"] != "deny" || chain[0]["point"] != "pre-tool-use" {
		t.Errorf("chain hook.decision events = %v, want one pre-tool-use deny", chain)
	}
	if len(report) != 1 {
		t.Fatalf("command reports = %v, want one", report)
	}
	detail, _ := report[0]["detail"].(map[string]any)
	if report[0]["decision"] != "deny" || !strings.Contains(fmt.Sprint(report[0]["hook"]), "guard.sh") ||
		detail["exit_code"] != float64(2) || detail["duration_ms"] == nil || !strings.Contains(fmt.Sprint(report[0]["reason"]), "writes are frozen") {
		t.Errorf("command report = %v, want guard.sh's deny with exit code 2, a duration and the reason", report[0])
	}
}

func TestHooksPreToolUseJSONDeny(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("PreToolUse", "write|edit", e.hookScript("deny.sh", `cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"a.txt is generated"}}'
`, 0))
	m := llmtest.NewModel(llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "write")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.work, "a.txt")); err == nil {
		t.Fatal("a.txt was written despite permissionDecision deny")
	}
	if got := toolResultText(m.Requests()[1], "call_1"); got != "Blocked: a.txt is generated" {
		t.Errorf("the model saw %q", got)
	}
}

func TestHooksUpdatedInput(t *testing.T) {
	needHooks(t)
	tests := []struct {
		name   string
		answer string
		check  func(t *testing.T, e *env, m *llmtest.Model)
	}{
		{"changes the path", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"out/b.txt"}}}`, func(t *testing.T, e *env, m *llmtest.Model) {
			b, err := os.ReadFile(filepath.Join(e.work, "out", "b.txt"))
			if err != nil || string(b) != "hi" {
				t.Errorf("out/b.txt = %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(e.work, "a.txt")); err == nil {
				t.Error("a.txt written at the old path")
			}
		}},
		{"breaks the schema", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":["x"]}}}`, func(t *testing.T, e *env, m *llmtest.Model) {
			if _, err := os.Stat(filepath.Join(e.work, "a.txt")); err == nil {
				t.Error("the call ran with arguments the hook broke")
			}
			got := toolResultText(m.Requests()[1], "call_1")
			if !strings.Contains(strings.ToLower(got), "path") {
				t.Errorf("the model saw %q, want a validation error naming path", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.writeSettings("PreToolUse", "Write", e.hookScript("edit.sh", "cat >/dev/null\necho '"+tt.answer+"'\n", 0))
			m := llmtest.NewModel(llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi"}`), llmtest.Reply("ok"))
			srv := llmtest.NewServer(t, m)
			r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "write")...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			tt.check(t, e, m)
		})
	}
}

func TestHooksUserPromptSubmitDeny(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("UserPromptSubmit", "", e.hookScript("prompt.sh", `if grep -qi 'password'; then echo "do not paste credentials" >&2; exit 2; fi
`, 0))
	m := llmtest.NewModel(llmtest.Reply("never sent"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "my password is hunter2")...)
	if r.code != exitStopped {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitStopped, r.stderr)
	}
	if n := m.Calls(); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
	if !strings.Contains(r.stderr, "do not paste credentials") {
		t.Errorf("stderr does not show the reason:\n%s", r.stderr)
	}
}

func TestHooksStopBlocksOnceThenAllows(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("Stop", "", e.hookScript("stop.sh", `if grep -q '"stop_hook_active":true'; then exit 0; fi
echo "run the tests before you finish" >&2
exit 2
`, 0))
	m := llmtest.NewModel(llmtest.Reply("Done."), llmtest.Reply("Tests pass. Done."))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "fix it")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 finalize rounds", len(reqs))
	}
	if got := lastUserText(reqs[1]); !strings.Contains(got, "run the tests before you finish") {
		t.Errorf("the nudge sent = %q", got)
	}
	if !strings.Contains(r.stdout, "Tests pass. Done.") {
		t.Errorf("stdout = %q", r.stdout)
	}
}

func TestHooksTimeoutFailsClosed(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("PreToolUse", "*", e.hookScript("hang.sh", "sleep 60\n", 0.5))
	m := llmtest.NewModel(llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	start := time.Now()
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "write")...)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("rein took %v; the hung hook was not killed", d)
	}
	if _, err := os.Stat(filepath.Join(e.work, "a.txt")); err == nil {
		t.Fatal("the call ran although its hook timed out")
	}
	if r.code != 0 {
		t.Logf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "timed out") {
		t.Errorf("the model saw %q, want the timeout", got)
	}
}

func TestHooksExit1IsNonBlocking(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("PreToolUse", "Write", e.hookScript("lint.sh", "echo 'linter not installed' >&2\nexit 1\n", 0))
	m := llmtest.NewModel(llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "write")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.work, "a.txt")); err != nil || string(b) != "hi" {
		t.Errorf("a.txt = %q, %v: exit 1 must not block", b, err)
	}
	if !strings.Contains(r.stderr, "linter not installed") {
		t.Errorf("stderr does not show the hook's error:\n%s", r.stderr)
	}
}

func TestHooksPostToolUseContextReachesNextRequest(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSettings("PostToolUse", "Edit|Write", e.hookScript("post.sh", `cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"a.txt was reformatted by the hook"}}'
`, 0))
	m := llmtest.NewModel(llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "write")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if !strings.Contains(strings.Join(transcript(reqs[1]), "\n"), "a.txt was reformatted by the hook") {
		t.Errorf("the second request lacks the hook's context:\n%s", strings.Join(transcript(reqs[1]), "\n"))
	}
	if strings.Contains(strings.Join(transcript(reqs[0]), "\n"), "reformatted") {
		t.Error("the context reached the first request")
	}
}

func TestHooksNeverSeeTheAPIKey(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	out := filepath.Join(e.home, "hook-env")
	e.writeSettings("UserPromptSubmit", "", map[string]any{"type": "command", "command": "env > " + out})
	m := llmtest.NewModel(llmtest.Reply("hi"))
	srv := llmtest.NewServer(t, m)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "hello")...); r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-test-secret-key") || strings.Contains(string(b), "ANTHROPIC_API_KEY") {
		t.Error("the hook process got the API key")
	}
	if !strings.Contains(string(b), "REIN_PROJECT_DIR="+e.work) {
		t.Errorf("REIN_PROJECT_DIR missing from the hook's environment:\n%s", b)
	}
}

// TestHooksFromClaude runs a typical repository's .claude/settings.json
// unchanged: an rm -rf guard on Bash, gofmt after Edit|Write, a prompt log.
func TestHooksFromClaude(t *testing.T) {
	needHooks(t)
	for _, tool := range []string{"jq", "gofmt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed; the sample hooks use it", tool)
		}
	}
	e := newEnv(t)
	if err := os.CopyFS(e.work, os.DirFS("../../hook/command/testdata/claude-repo")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.work, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "shell", `{"command":"rm -rf build"}`),
		llmtest.CallTool("call_2", "write", `{"path":"main.go","content":"package main\nfunc main(){println( 1 )}\n"}`),
		llmtest.Reply("Done."),
	)
	srv := llmtest.NewServer(t, m)
	list := e.run(nil, "hooks", "list", "--hooks-from", "claude", "--cwd", e.work)
	if list.code != 0 || !strings.Contains(list.stdout, "block-rm.sh") || !strings.Contains(list.stdout, "skipped: event Notification") {
		t.Errorf("hooks list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "--hooks-from", "claude", "tidy up")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.work, "build")); err != nil {
		t.Error("build/ was deleted despite the rm -rf guard")
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.HasPrefix(got, "Blocked: rm -rf is not allowed") {
		t.Errorf("the model saw %q", got)
	}
	src, _ := os.ReadFile(filepath.Join(e.work, "main.go"))
	if diff := cmp.Diff("package main\n\nfunc main() { println(1) }\n", string(src)); diff != "" {
		t.Errorf("main.go not formatted by the PostToolUse hook (-want +got):\n%s", diff)
	}
	log, _ := os.ReadFile(filepath.Join(e.work, ".claude", "prompts.log"))
	if !strings.Contains(string(log), `"prompt":"tidy up"`) {
		t.Errorf("prompts.log = %q", log)
	}
	// Without the switch the .claude hooks do not run.
	m2 := llmtest.NewModel(llmtest.CallTool("call_1", "write", `{"path":"other.go","content":"package main\nfunc f(){}\n"}`), llmtest.Reply("ok"))
	srv2 := llmtest.NewServer(t, m2)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv2, e, "--approve", "auto", "again")...); r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if src, _ := os.ReadFile(filepath.Join(e.work, "other.go")); string(src) != "package main\nfunc f(){}\n" {
		t.Errorf("other.go = %q: the .claude formatter ran without --hooks-from claude", src)
	}
}

func TestHooksList(t *testing.T) {
	e := newEnv(t)
	e.writeSettings("PreToolUse", "Bash", map[string]any{"type": "command", "command": "./guard.sh", "timeout": 5})
	e.writeFile(".claude/settings.json", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./stop.sh"}]}]}}`, 0o644)

	r := e.run(nil, "hooks", "list", "--cwd", e.work, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var got struct {
		Files []hookFileRow `json:"files"`
		Hooks []hookRow     `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	want := []hookRow{{Event: "PreToolUse", Matcher: "Bash", Type: "command", Command: "./guard.sh", Timeout: 5, Source: filepath.Join(e.work, ".rein", "settings.json")}}
	if diff := cmp.Diff(want, got.Hooks); diff != "" {
		t.Errorf("hooks without --hooks-from (-want +got):\n%s", diff)
	}
	if len(got.Files) != 3 || !got.Files[1].Exists || got.Files[0].Exists {
		t.Errorf("files = %+v, want the config file (missing) and .rein/settings.json (read) first", got.Files)
	}

	r = e.run(nil, "hooks", "list", "--cwd", e.work, "--hooks-from", "claude")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, s := range []string{".claude/settings.json (read)", ".claude/settings.local.json (not found)", "./stop.sh", "./guard.sh", "5s", "60s"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("table lacks %q:\n%s", s, r.stdout)
		}
	}

	if r := e.run(nil, "hooks", "list", "--cwd", e.work, "--hooks-from", "cursor"); r.code != 2 || !strings.Contains(r.stderr, "--hooks-from") {
		t.Errorf("bad --hooks-from: exit %d, stderr %q", r.code, r.stderr)
	}
	e.writeFile(".rein/settings.json", `{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[{"type":"command","command":"x"}]}]}}`, 0o644)
	if r := e.run(nil, "hooks", "list", "--cwd", e.work); r.code != 2 || !strings.Contains(r.stderr, "matcher") {
		t.Errorf("bad matcher: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestHooksSessionStartContextAndSessionEnd(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	ended := filepath.Join(e.home, "ended")
	e.writeFile(".rein/settings.json", `{"hooks":{
		"SessionStart":[{"hooks":[{"type":"command","command":"grep -q '\"source\":\"startup\"' && echo 'The release branch is frozen.'"}]}],
		"SessionEnd":[{"hooks":[{"type":"command","command":"cat > `+ended+`"}]}]}}`, 0o644)
	m := llmtest.NewModel(llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "hello")...); r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := strings.Join(transcript(m.Requests()[0]), "\n"); !strings.Contains(got, "The release branch is frozen.") {
		t.Errorf("the first request lacks the SessionStart context:\n%s", got)
	}
	b, err := os.ReadFile(ended)
	if err != nil || !strings.Contains(string(b), `"hook_event_name":"SessionEnd"`) {
		t.Errorf("SessionEnd hook input = %q, %v", b, err)
	}
}
