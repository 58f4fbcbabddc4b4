package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// writeSkill writes a SKILL.md under dir (relative to the workspace).
func (e *env) writeSkill(dir, name, desc, extra, body string) {
	e.t.Helper()
	e.writeFile(dir+"/"+name+"/SKILL.md", "---\nname: "+name+"\ndescription: "+desc+"\n"+extra+"---\n"+body+"\n", 0o644)
}

// systemOf joins a request's system prompt.
func systemOf(req *llm.Request) string {
	var b strings.Builder
	for _, s := range req.System {
		b.WriteString(s.Text)
		b.WriteString("\x00")
	}
	return b.String()
}

// jsonEvents decodes the event lines of 'rein run --json'.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestSkillsEndToEnd: through the CLI against the fake provider, over a
// hundred steps: the catalog lists the higher-priority skill of a name
// and never a body; the skill tool's activation loads the body and not
// the files beside it; a file is loaded only when asked for; the system
// prompt is the same bytes at every step and in the next run, and the
// simulated prompt cache never breaks; activation and deactivation are on
// the log the --json observer prints.
func TestSkillsEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.writeSkill(".claude/skills", "release-notes", "Writes release notes from the git log.", "", "RELEASE BODY: group commits by area; see reference.md.")
	e.writeFile(".claude/skills/release-notes/reference.md", "REFERENCE TEXT", 0o644)
	e.writeSkill(".claude/skills", "review", "the shared review.", "", "SHARED REVIEW BODY")
	e.writeSkill(".rein/skills", "review", "rein's own review.", "", "REIN REVIEW BODY")
	e.writeFile("AGENTS.md", strings.Repeat("Keep changes small and tested. ", 300), 0o644)

	const steps = 100
	script := []llmtest.Entry{
		llmtest.CallTool("call_1", "skill", `{"name":"release-notes"}`),
		llmtest.CallTool("call_2", "skill", `{"name":"release-notes","path":"reference.md"}`),
	}
	for i := 3; i < steps; i++ {
		script = append(script, llmtest.CallTool(fmt.Sprintf("call_%d", i), "ls", `{}`))
	}
	script = append(script, llmtest.CallTool("call_last", "skill", `{"name":"release-notes","deactivate":true}`), llmtest.Reply("done"))
	m := llmtest.NewModel(script...)
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--json", "--max-steps", "150", "write the release notes")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if len(reqs) != steps+1 {
		t.Fatalf("%d requests, want %d", len(reqs), steps+1)
	}
	sys := systemOf(reqs[0])
	for _, want := range []string{"- release-notes: Writes release notes from the git log.", "- review: rein's own review.", "Keep changes small"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	for _, never := range []string{"RELEASE BODY", "REFERENCE TEXT", "the shared review", "REVIEW BODY"} {
		if strings.Contains(sys, never) {
			t.Errorf("system prompt holds %q: only names and descriptions belong there", never)
		}
	}
	for i, req := range reqs {
		if systemOf(req) != sys {
			t.Fatalf("request %d: the system prompt changed (the prompt cache would break)", i+1)
		}
	}
	if got := toolResultText(reqs[1], "call_1"); !strings.Contains(got, "RELEASE BODY") || strings.Contains(got, "REFERENCE TEXT") || !strings.Contains(got, "reference.md") {
		t.Errorf("activation result = %q, want the body and the file's name, not its contents", got)
	}
	if got := toolResultText(reqs[2], "call_2"); got != "REFERENCE TEXT" {
		t.Errorf("file result = %q", got)
	}
	var metas []string
	var reads []int64
	for _, ev := range jsonEvents(t, r.stdout) {
		switch ev["type"] {
		case "cache.break":
			t.Errorf("cache break: %v", ev["data"])
		case "session.meta":
			d := ev["data"].(map[string]any)
			if k := d["key"].(string); strings.HasPrefix(k, "skill.") {
				metas = append(metas, k+" "+d["value"].(string))
			}
		case "assistant.message":
			u, _ := ev["data"].(map[string]any)["usage"].(map[string]any)
			n, _ := u["cache_read"].(float64)
			reads = append(reads, int64(n))
		}
	}
	want := []string{
		`skill.activate {"name":"release-notes","source":"workspace:.claude","via":"tool"}`,
		`skill.deactivate {"name":"release-notes","source":"workspace:.claude","via":"tool"}`,
	}
	if strings.Join(metas, "\n") != strings.Join(want, "\n") {
		t.Errorf("skill records on the log:\n%s\nwant:\n%s", strings.Join(metas, "\n"), strings.Join(want, "\n"))
	}
	if len(reads) != steps+1 {
		t.Fatalf("%d assistant messages", len(reads))
	}
	for i, n := range reads[1:] {
		if n == 0 {
			t.Fatalf("step %d read nothing from the prompt cache", i+2)
		}
	}

	// The next run over the same folders sends the same system prompt.
	m2 := llmtest.NewModel(llmtest.Reply("again"))
	srv2 := llmtest.NewServer(t, m2)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv2, e, "again")...); r.code != 0 {
		t.Fatalf("second run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := systemOf(m2.Requests()[0]); got != sys {
		t.Error("a second run sent another system prompt")
	}
}

// TestSkillHookSeesSkill: a hook matching the Skill tool, as Claude Code
// names it, is told the skill's name as tool_input.skill and can refuse
// the activation.
func TestSkillHookSeesSkill(t *testing.T) {
	needHooks(t)
	e := newEnv(t)
	e.writeSkill(".claude/skills", "deploy", "Deploys.", "", "DEPLOY BODY")
	e.writeFile(".claude/settings.json", `{"hooks":{"PreToolUse":[{"matcher":"Skill","hooks":[{"type":"command","command":"grep -q '\"skill\":\"deploy\"' && { echo 'no deploys on Fridays' >&2; exit 2; } || true"}]}]}}`, 0o644)
	m := llmtest.NewModel(llmtest.CallTool("call_1", "skill", `{"name":"deploy"}`), llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--hooks-from", "claude", "deploy")...); r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := toolResultText(m.Requests()[1], "call_1"); !strings.Contains(got, "no deploys on Fridays") || strings.Contains(got, "DEPLOY BODY") {
		t.Errorf("activation result = %q, want the hook's refusal", got)
	}
}
