package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/skill"
)

// TestSkillsList: 'rein skills list' shows each skill with where it
// comes from, and each folder it skipped with why; --json says the same.
func TestSkillsList(t *testing.T) {
	e := newEnv(t)
	e.writeSkill(".rein/skills", "review", "rein's review.", "allowed-tools: Bash(git diff:*), Frobnicate(x)\n", "")
	e.writeSkill(".claude/skills", "review", "the shared review.", "", "")
	e.writeFile(".claude/skills/broken/SKILL.md", "no front matter here", 0o644)
	e.writeSkill(".rein/plugins/kit/skills", "pack", "packs things.", "disable-model-invocation: true\n", "")
	e.writeFile("../config/rein/skills/mine/SKILL.md", "---\nname: mine\ndescription: my own.\n---\n", 0o644)

	r := e.run(nil, "skills", "list", "--cwd", e.work)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"review — rein's review.\n  from workspace:.rein: " + filepath.Join(e.work, ".rein/skills/review/SKILL.md"),
		"mine — my own.\n  from user: ",
		"pack — packs things.\n  from plugin:kit",
		"started by the user only (/pack)",
		"not applied: Frobnicate(x): rein cannot match",
		filepath.Join(e.work, ".claude/skills/review/SKILL.md") + ": shadowed by " + filepath.Join(e.work, ".rein/skills/review/SKILL.md"),
		filepath.Join(e.work, ".claude/skills/broken/SKILL.md") + ": no front matter",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("listing lacks %q:\n%s", want, r.stdout)
		}
	}
	r = e.run(nil, "skills", "list", "--cwd", e.work, "--json")
	if r.code != 0 {
		t.Fatalf("--json: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var out struct {
		Skills []struct {
			Name, Source string
		}
		Skipped []struct{ Path, Reason string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, s := range out.Skills {
		got = append(got, s.Name+" "+s.Source)
	}
	if diff := cmp.Diff([]string{"mine user", "pack plugin:kit", "review workspace:.rein"}, got); diff != "" {
		t.Errorf("--json skills (-want +got):\n%s", diff)
	}
	if len(out.Skipped) != 2 {
		t.Errorf("--json skipped = %+v, want the shadowed and the broken one", out.Skipped)
	}
}

// TestPermissionsList: 'rein permissions list' shows every rule with the
// file or flag it comes from, deny rules first, and a rule rein cannot
// apply with why.
func TestPermissionsList(t *testing.T) {
	e := newEnv(t)
	e.writeFile(".claude/settings.json", `{"permissions":{"allow":["Bash(git:*)"],"ask":["Bash(git push:*)"],"deny":["Read(./secrets/**)","WebSearch(x)"]}}`, 0o644)
	e.writeFile(".rein/settings.json", `{"permissions":{"allow":["Edit"]}}`, 0o644)
	r := e.run(nil, "permissions", "list", "--cwd", e.work, "--allow", "Bash(go test:*)", "--deny", "Bash(rm:*)", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var out struct {
		Rules []struct{ Rule, Verdict, Source, Skipped string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	claude, rein := filepath.Join(e.work, ".claude/settings.json"), filepath.Join(e.work, ".rein/settings.json")
	var got []string
	for _, x := range out.Rules {
		line := x.Verdict + " " + x.Rule + " " + x.Source
		if x.Skipped != "" {
			line += " skipped"
		}
		got = append(got, line)
	}
	want := []string{
		"deny Read(./secrets/**) " + claude,
		"deny WebSearch(x) " + claude + " skipped",
		"deny Bash(rm:*) --deny",
		"ask Bash(git push:*) " + claude,
		"allow Bash(git:*) " + claude,
		"allow Edit " + rein,
		"allow Bash(go test:*) --allow",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	r = e.run(nil, "permissions", "list", "--cwd", e.work)
	if r.code != 0 || !strings.Contains(r.stdout, "deny  Read(./secrets/**)") || !strings.Contains(r.stdout, "(skipped: rein cannot match") {
		t.Errorf("table: exit %d\n%s", r.code, r.stdout)
	}
	if r := e.run(nil, "permissions", "list", "--cwd", e.work, "--allow", "Bash(go test"); r.code != 2 || !strings.Contains(r.stderr, "--allow") {
		t.Errorf("a bad --allow: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSkillStartedByPromptAllowsItsTools: a prompt /NAME starts the skill
// (its body reaches the model with the request, recorded as the host's
// activation); while it is active, its allowed-tools let a matching
// command run in a headless run that would refuse it, a command they do
// not cover is still refused, and a deny rule wins over the allowance.
func TestSkillStartedByPromptAllowsItsTools(t *testing.T) {
	e := newEnv(t)
	e.writeSkill(".claude/skills", "stamp", "Stamps the build.", "allowed-tools: Bash(echo:*)\ndisable-model-invocation: true\n", "STAMP BODY: echo the stamp into stamp.txt.")
	e.writeFile(".claude/settings.json", `{"permissions":{"deny":["Bash(echo secret:*)"]}}`, 0o644)
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "shell", `{"command":"echo stamped"}`),
		llmtest.CallTool("call_2", "shell", `{"command":"touch other.txt"}`),
		llmtest.CallTool("call_3", "shell", `{"command":"echo secret"}`),
		llmtest.Reply("stamped"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--json", "/stamp for release 1.2")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	first := reqs[0].Messages[0]
	if text := resultText(first.Parts); !strings.Contains(text, "STAMP BODY") || !strings.Contains(text, "for release 1.2") {
		t.Errorf("first message = %q, want the skill's body and the request", text)
	}
	if strings.Contains(systemOf(reqs[0]), "stamp") {
		t.Error("a skill the model may not start is in its catalog")
	}
	if got := toolResultText(reqs[1], "call_1"); !strings.Contains(got, "stamped") {
		t.Errorf("echo under the skill's allowance = %q, want it run", got)
	}
	if got := toolResultText(reqs[2], "call_2"); !strings.Contains(got, "Blocked") {
		t.Errorf("a command the skill does not allow = %q, want it refused", got)
	}
	if _, err := os.Stat(filepath.Join(e.work, "other.txt")); err == nil {
		t.Error("touch ran")
	}
	if got := toolResultText(reqs[3], "call_3"); !strings.Contains(got, "Bash(echo secret:*)") {
		t.Errorf("a command a deny rule covers = %q, want the deny rule named", got)
	}
	if !strings.Contains(r.stdout, `"key":"skill.activate","value":"{\"name\":\"stamp\",\"source\":\"workspace:.claude\",\"via\":\"host\"}"`) {
		t.Errorf("no host activation on the log:\n%s", r.stdout)
	}
}

// TestMemoryFilesInTheSystemPrompt: the user's memory file comes before
// the project's, an import follows its file, each is its own section, and
// a file the model changes during the turn is told to it, with the new
// contents, before its next request.
func TestMemoryFilesInTheSystemPrompt(t *testing.T) {
	e := newEnv(t)
	e.writeFile("../config/rein/AGENTS.md", "USER RULE", 0o644)
	e.writeFile("AGENTS.md", "PROJECT RULE, see @docs/style.md", 0o644)
	e.writeFile("docs/style.md", "STYLE RULE", 0o644)
	r := e.run(nil, "run", "--show-context", "--cwd", e.work)
	if !strings.Contains(r.stdout, "system rules    "+filepath.Join(e.work, "docs/style.md")) || !strings.Contains(r.stdout, "(import, imported by "+filepath.Join(e.work, "AGENTS.md")) {
		t.Errorf("--show-context does not attribute the files:\n%s", r.stdout)
	}
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "shell", `{"command":"echo 'CHANGED RULE' > AGENTS.md"}`),
		llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r = e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "go")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	var sections []string
	for _, s := range reqs[0].System {
		sections = append(sections, s.Text)
	}
	if len(sections) != 4 || !strings.HasPrefix(sections[1], skill.MemoryPreface) || !strings.Contains(sections[1], "USER RULE") || !strings.Contains(sections[2], "PROJECT RULE") || !strings.Contains(sections[3], "STYLE RULE") {
		t.Fatalf("system sections:\n%s", strings.Join(sections, "\n---\n"))
	}
	if !strings.Contains(sections[2], `file="`+filepath.Join(e.work, "AGENTS.md")+`"`) {
		t.Errorf("the section does not name its file: %q", sections[2])
	}
	if systemOf(reqs[1]) != systemOf(reqs[0]) {
		t.Error("the system prompt changed within the turn")
	}
	var told bool
	for _, msg := range reqs[1].Messages {
		if text := resultText(msg.Parts); strings.Contains(text, "CHANGED RULE") && strings.Contains(text, "AGENTS.md changed") {
			told = true
		}
	}
	if !told {
		t.Error("the change to AGENTS.md was not told to the model")
	}
}
