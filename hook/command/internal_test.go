package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/tool"
)

func TestMatcher(t *testing.T) {
	tests := []struct {
		name    string
		matcher string
		tool    string
		want    bool
	}{
		{"empty matches all", "", "shell", true},
		{"star matches all", "*", "anything", true},
		{"exact rein name", "write", "write", true},
		{"exact other name", "write", "edit", false},
		{"claude alias", "Bash", "shell", true},
		{"alias is case sensitive", "bash", "shell", false},
		{"alternatives", "Edit|MultiEdit|Write", "multi_edit", true},
		{"alternatives miss", "Edit|Write", "read", false},
		{"regex", "Notebook.*|Wri.*", "read", false},
		{"regex on alias", "Wri.*", "write", true},
		{"mcp regex", "mcp__github__.*", "mcp__github__create_issue", true},
		{"mcp regex other server", "mcp__github__.*", "mcp__slack__post", false},
		{"mcp exact", "mcp__memory__save", "mcp__memory__save", true},
		{"claude mcp regex on a rein mcp name", "mcp__github__.*", "mcp_github_create_issue", true},
		{"claude mcp exact on a rein mcp name", "mcp__memory__save_note", "mcp_memory_save_note", true},
		{"claude mcp regex, other server", "mcp__github__.*", "mcp_slack_post", false},
		{"rein mcp name", "mcp_github_.*", "mcp_github_create_issue", true},
		{"regex is unanchored", "e.d", "read", true},
		{"names are exact, not prefixes", "rea", "read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := compileMatcher(tt.matcher)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Match(tt.tool, nil); got != tt.want {
				t.Errorf("%q matches %q = %v, want %v", tt.matcher, tt.tool, got, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name  string
		event string
		o     outcome
		want  answer
	}{
		{"exit 0 silent", PreToolUse, outcome{exit: 0}, answer{}},
		{"exit 0 text is context for prompts", UserPromptSubmit, outcome{exit: 0, stdout: "branch main\n"}, answer{context: []string{"branch main"}}},
		{"exit 0 text is not context for tools", PreToolUse, outcome{exit: 0, stdout: "checked\n"}, answer{}},
		{"exit 2 blocks with stderr", PreToolUse, outcome{exit: 2, stderr: "no\n", stdout: `{"decision":"approve"}`}, answer{kind: kindBlock, reason: "no"}},
		{"exit 2 without stderr", Stop, outcome{exit: 2}, answer{kind: kindBlock, reason: "blocked by hook (exit 2, no message on stderr)"}},
		{"exit 1 is a warning", PreToolUse, outcome{exit: 1, stderr: "oops"}, answer{warning: "hook exited 1: oops"}},
		{"exit 3 is a warning", Stop, outcome{exit: 3}, answer{warning: "hook exited 3: no message on stderr"}},
		{"decision block", Stop, outcome{stdout: `{"decision":"block","reason":"tests fail"}`}, answer{kind: kindBlock, reason: "tests fail"}},
		{"continue false", PostToolUse, outcome{stdout: `{"continue":false,"stopReason":"enough"}`}, answer{stop: true, stopReason: "enough"}},
		{"continue false default reason", PostToolUse, outcome{stdout: `{"continue":false}`}, answer{stop: true, stopReason: "stopped by hook"}},
		{"system message", SessionEnd, outcome{stdout: `{"systemMessage":"bye"}`}, answer{system: "bye"}},
		{"permission deny", PreToolUse, outcome{stdout: `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"secret"}}`}, answer{kind: kindBlock, reason: "secret"}},
		{"permission ask", PreToolUse, outcome{stdout: `{"hookSpecificOutput":{"permissionDecision":"ask"}}`}, answer{kind: kindAsk}},
		{"permission allow with edit", PreToolUse, outcome{stdout: `{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"path":"x"}}}`}, answer{kind: kindAllow, update: json.RawMessage(`{"path":"x"}`)}},
		{"unknown permission", PreToolUse, outcome{stdout: `{"hookSpecificOutput":{"permissionDecision":"maybe"}}`}, answer{warning: `hook answered unknown permissionDecision "maybe"; use allow, deny or ask`}},
		{"additional context", PostToolUse, outcome{stdout: ` {"hookSpecificOutput":{"additionalContext":"lint ok"}} `}, answer{context: []string{"lint ok"}}},
		{"null updatedInput is no edit", PreToolUse, outcome{stdout: `{"hookSpecificOutput":{"updatedInput":null}}`}, answer{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decode(tt.event, &tt.o)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(answer{})); diff != "" {
				t.Errorf("decode (-want +got):\n%s", diff)
			}
		})
	}
	bad := decode(PreToolUse, &outcome{stdout: `{"decision":`})
	if !strings.HasPrefix(bad.warning, "hook printed invalid JSON") || bad.kind != kindContinue {
		t.Errorf("invalid JSON = %+v, want a non-blocking warning", bad)
	}
}

func TestApplyUpdate(t *testing.T) {
	tests := []struct {
		name, tool, args, update, want string
	}{
		{"partial merge", "write", `{"path":"a","content":"x"}`, `{"content":"y"}`, `{"content":"y","path":"a"}`},
		{"file_path maps to path", "write", `{"path":"a","content":"x"}`, `{"file_path":"b"}`, `{"content":"x","path":"b"}`},
		{"full claude input with new file_path", "edit", `{"path":"a"}`, `{"path":"a","file_path":"b"}`, `{"path":"b"}`},
		{"full input with new path and old file_path", "edit", `{"path":"a"}`, `{"path":"c","file_path":"a"}`, `{"path":"c"}`},
		{"non-file tool keeps file_path", "shell", `{"command":"ls"}`, `{"file_path":"b"}`, `{"command":"ls","file_path":"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyUpdate(tt.tool, json.RawMessage(tt.args), json.RawMessage(tt.update))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := applyUpdate("write", json.RawMessage(`{}`), json.RawMessage(`[1]`)); err == nil {
		t.Error("an array updatedInput was accepted")
	}
}

func TestOutInput(t *testing.T) {
	got := string(outInput("read", json.RawMessage(`{"path":"a.go","limit":3}`)))
	if diff := cmp.Diff(`{"file_path":"a.go","limit":3,"path":"a.go"}`, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := string(outInput("shell", json.RawMessage(`{"command":"ls"}`))); got != `{"command":"ls"}` {
		t.Errorf("shell input changed: %s", got)
	}
}

func TestBoundedBuffer(t *testing.T) {
	b := &boundedBuffer{max: 4}
	b.Write([]byte("ab"))
	b.Write([]byte("cdef"))
	b.Write([]byte("gh"))
	if diff := cmp.Diff("abcd\n[… 4 more bytes cut]", b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBuildEnvWithholdsSecrets(t *testing.T) {
	base := []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-ant-123456789", "GITHUB_TOKEN=ghp_abcdefgh", "SHORT_SECRET=x", "HOME=/root", "OPENAI_API_KEY=sk-openai-99999",
		"GIT_AUTHOR_NAME=Ann", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/bus"}
	env, secrets := buildEnv(base, []string{"openai_api_key"}, []string{"EXTRA=1"}, "/repo")
	want := []string{"PATH=/bin", "HOME=/root", "OPENAI_API_KEY=sk-openai-99999", "GIT_AUTHOR_NAME=Ann", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/bus", "EXTRA=1", "REIN_PROJECT_DIR=/repo", "CLAUDE_PROJECT_DIR=/repo"}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sk-ant-123456789", "ghp_abcdefgh"}, secrets); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
}

func TestFlattenErrors(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"bad regex", `{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[{"type":"command","command":"x"}]}]}}`, "hooks.PreToolUse[0]"},
		{"negative timeout", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x","timeout":-1}]}]}}`, "timeout -1"},
		{"huge timeout", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x","timeout":1e300}]}]}}`, "timeout 1e+300"},
		{"not an object", `[1]`, "must be a JSON object"},
		{"hooks of wrong shape", `{"hooks":{"Stop":{"command":"x"}}}`, "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json), "s.json", false)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "s.json") {
				t.Errorf("err = %v, want one naming s.json and %q", err, tt.want)
			}
		})
	}
	es, err := Parse([]byte(`{"disableAllHooks":true,"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]}}`), "s.json", true)
	if err != nil || len(es) != 0 {
		t.Errorf("disableAllHooks: %d entries, %v", len(es), err)
	}
	es, err = Parse([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"prompt","prompt":"is it done?"},{"command":"true"}]}]}}`), "s.json", false)
	if err != nil || len(es) != 2 || es[0].Active() || !es[1].Active() || es[0].Skipped() != "hook type prompt is not supported by rein" {
		t.Errorf("entries = %+v, %v: want a skipped prompt hook and an active default-typed command", es, err)
	}
}

func TestMCPNames(t *testing.T) {
	if diff := cmp.Diff([]string{"mcp__my__server_tool", "mcp__my_server__tool"}, mcpNames("mcp_my_server_tool", nil)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := theirName("mcp_github_create_issue", nil); got != "mcp__github__create_issue" {
		t.Errorf("theirName = %q", got)
	}
	// A known server whose name holds "_" splits after the server name.
	if got := theirName("mcp_my_srv_echo", []string{"my", "my_srv"}); got != "mcp__my_srv__echo" {
		t.Errorf("theirName with servers = %q, want mcp__my_srv__echo", got)
	}
	m, _ := compileMatcher("mcp__my__.*")
	if m.Match("mcp_my_srv_echo", []string{"my_srv"}) {
		t.Error("mcp__my__.* matched a tool of server my_srv")
	}
}

func TestVocabularyBothWays(t *testing.T) {
	tests := []struct {
		name, tool, args, out, update, back string
	}{
		{"shell timeout is milliseconds", "shell", `{"command":"make","timeout":30}`, `{"command":"make","timeout":30000}`, `{"timeout":120000}`, `{"command":"make","timeout":120}`},
		{"todo items are todos, with the activeForm the format requires", "todo", `{"items":[{"content":"a","status":"pending"}]}`, `{"todos":[{"activeForm":"a","content":"a","status":"pending"}]}`, `{"todos":[]}`, `{"items":[]}`},
		{"a todo told back as it was told is rein's again", "todo", `{"items":[{"content":"a","status":"pending"}]}`, `{"todos":[{"activeForm":"a","content":"a","status":"pending"}]}`, `{"todos":[{"activeForm":"a","content":"a","status":"pending"}]}`, `{"items":[{"content":"a","status":"pending"}]}`},
		{"a shell timeout in milliseconds comes back exact", "shell", `{"command":"make"}`, `{"command":"make"}`, `{"timeout":700}`, `{"command":"make","timeout":0.7}`},
		{"todos in TodoWrite's shape", "todo", `{"items":[]}`, `{"todos":[]}`,
			`{"todos":[{"content":"a","status":"pending","activeForm":"Doing a"},{"id":"2","content":"b","status":"completed","priority":"high"}]}`,
			`{"items":[{"content":"a","status":"pending"},{"content":"b","id":"2","status":"completed"}]}`},
		{"todos of another shape are left for validation", "todo", `{"items":[]}`, `{"todos":[]}`, `{"todos":"a"}`, `{"items":"a"}`},
		{"file path in both spellings", "edit", `{"path":"a.go","old_string":"x","new_string":"y"}`, `{"file_path":"a.go","new_string":"y","old_string":"x","path":"a.go"}`, `{"file_path":"b.go"}`, `{"new_string":"y","old_string":"x","path":"b.go"}`},
		{"other tools unchanged", "glob", `{"pattern":"*.go"}`, `{"pattern":"*.go"}`, `{"pattern":"*"}`, `{"pattern":"*"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.out, string(outInput(tt.tool, json.RawMessage(tt.args)))); diff != "" {
				t.Errorf("out (-want +got):\n%s", diff)
			}
			back, err := applyUpdate(tt.tool, json.RawMessage(tt.args), json.RawMessage(tt.update))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.back, string(back)); diff != "" {
				t.Errorf("back (-want +got):\n%s", diff)
			}
		})
	}
	for _, v := range Vocabulary {
		if got := theirName(v.Tool, nil); got != v.Theirs {
			t.Errorf("theirName(%q) = %q, want %q", v.Tool, got, v.Theirs)
		}
		m, _ := compileMatcher(v.Theirs)
		if !m.Match(v.Tool, nil) {
			t.Errorf("matcher %q does not match %q", v.Theirs, v.Tool)
		}
	}
}

func TestToolResponseShapes(t *testing.T) {
	shell := &tool.Result{Parts: tool.Text("hello\n\nExit code 0 (took 3ms).").Parts, Meta: map[string]any{"exit_code": 0}}
	killed := &tool.Result{Parts: tool.Text("Timed out after 1s: …").Parts, IsError: true, Meta: map[string]any{"exit_code": -1}}
	tests := []struct {
		name, tool, args string
		res              *tool.Result
		want             string
	}{
		{"shell", "shell", `{"command":"echo hello"}`, shell, `{"stdout":"hello\n","stderr":"","interrupted":false,"isImage":false,"exit_code":0}`},
		{"shell interrupted", "shell", `{"command":"sleep 9"}`, killed, `{"stdout":"","stderr":"","interrupted":true,"isImage":false,"exit_code":-1}`},
		{"write", "write", `{"path":"a.go","content":"package a"}`, tool.Text("Created a.go"), `{"type":"create","filePath":"a.go","content":"package a","success":true,"output":"Created a.go"}`},
		{"edit", "edit", `{"path":"a.go","old_string":"a","new_string":"b"}`, tool.Text("Edited a.go"), `{"filePath":"a.go","oldString":"a","newString":"b","success":true,"output":"Edited a.go"}`},
		{"todo", "todo", `{"items":[{"content":"a","status":"pending"}]}`, tool.Text("1 item"), `{"newTodos":[{"activeForm":"a","content":"a","status":"pending"}],"output":"1 item"}`},
		{"other", "glob", `{"pattern":"*"}`, tool.Text("a.go"), `{"output":"a.go"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(toolResponse(tt.tool, json.RawMessage(tt.args), tt.res))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
