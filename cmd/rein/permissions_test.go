package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/tool"
)

func TestParsePermission(t *testing.T) {
	tests := []struct {
		spec string
		want []tool.Rule
		err  bool
	}{
		{"Bash(go test:*)", []tool.Rule{{Tool: "shell", CommandPrefix: "go test", Verdict: tool.Allow, Name: "Bash(go test:*)"}}, false},
		{"Bash", []tool.Rule{{Tool: "shell", Verdict: tool.Allow, Name: "Bash"}}, false},
		{"Read(./secrets/**)", []tool.Rule{
			{Tool: "read", PathPrefix: "secrets", Verdict: tool.Allow, Name: "Read(./secrets/**)"},
			{Tool: "grep", PathPrefix: "secrets", Verdict: tool.Allow, Name: "Read(./secrets/**)"},
			{Tool: "glob", PathPrefix: "secrets", Verdict: tool.Allow, Name: "Read(./secrets/**)"},
			{Tool: "ls", PathPrefix: "secrets", Verdict: tool.Allow, Name: "Read(./secrets/**)"}}, false},
		{"Edit", []tool.Rule{
			{Tool: "write", Verdict: tool.Allow, Name: "Edit"},
			{Tool: "edit", Verdict: tool.Allow, Name: "Edit"},
			{Tool: "multi_edit", Verdict: tool.Allow, Name: "Edit"}}, false},
		{"mcp__github__create_issue", []tool.Rule{{Tool: "mcp_github_create_issue", Verdict: tool.Allow, Name: "mcp__github__create_issue"}}, false},
		{"TodoWrite", []tool.Rule{{Tool: "todo", Verdict: tool.Allow, Name: "TodoWrite"}}, false},
		{"Bash(go test", nil, true},
		{"Read(src/*/x)", nil, true},
		{"mcp__github", nil, true},
		{"WebFetch(domain:example.com)", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := parsePermission(tt.spec, tool.Allow)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPermissionPrecedence: deny wins over ask, ask over allow, whatever
// file or flag each came from.
func TestPermissionPrecedence(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".claude/settings.json", `{"permissions":{"allow":["Bash(git:*)","Edit"],"ask":["Bash(git push:*)"]}}`)
	write(".rein/settings.json", `{"permissions":{"deny":["Edit(./vendor/**)"]}}`)
	rules, err := permissionRules(root, &permissionFlags{deny: []string{"Bash(git push --force:*)"}}, func(w string) { t.Error(w) })
	if err != nil {
		t.Fatal(err)
	}
	person := tool.ApproverFunc(func(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
		return tool.Approval{Verdict: tool.Deny, Reason: "asked the person"}, nil
	})
	ap, err := newApprover("deny", person, rules...)
	if err != nil {
		t.Fatal(err)
	}
	apAsk, _ := newApprover("auto", person, rules...)
	tests := []struct {
		name    string
		ap      tool.Approver
		req     tool.ApprovalRequest
		verdict tool.Verdict
		reason  string
	}{
		{"allow", ap, tool.ApprovalRequest{Tool: "shell", Command: "git status"}, tool.Allow, "Bash(git:*)"},
		{"ask over allow, no one to ask", ap, tool.ApprovalRequest{Tool: "shell", Command: "git push origin"}, tool.Deny, "no approver"},
		{"ask over allow under auto", apAsk, tool.ApprovalRequest{Tool: "shell", Command: "git push origin"}, tool.Deny, "asked the person"},
		{"deny over ask", apAsk, tool.ApprovalRequest{Tool: "shell", Command: "git push --force origin"}, tool.Deny, "Bash(git push --force:*)"},
		{"deny over allow", ap, tool.ApprovalRequest{Tool: "write", Path: "vendor/a.go"}, tool.Deny, "Edit(./vendor/**)"},
		{"allow elsewhere", ap, tool.ApprovalRequest{Tool: "write", Path: "a.go"}, tool.Allow, "Edit"},
		{"default names the allow rules", ap, tool.ApprovalRequest{Tool: "shell", Command: "rm -rf x"}, tool.Deny, "only Bash(git:*), Edit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.ap.Approve(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if a.Verdict != tt.verdict || !strings.Contains(a.Reason, tt.reason) {
				t.Errorf("got %s %q, want %s naming %q", a.Verdict, a.Reason, tt.verdict, tt.reason)
			}
		})
	}
}

// TestRunAllowGoTestOnly: 'rein run --allow Bash(go test:*)' runs go test
// and refuses rm, naming the rule it was given.
func TestRunAllowGoTestOnly(t *testing.T) {
	e := newEnv(t)
	e.writeFile("go.mod", "module example.com/a\n\ngo 1.21\n", 0o644)
	e.writeFile("a.go", "package a\n", 0o644)
	e.writeFile("keep.txt", "keep\n", 0o644)
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "shell", `{"command":"go test ./..."}`),
		llmtest.CallTool("call_2", "shell", `{"command":"rm keep.txt"}`),
		llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--allow", "Bash(go test:*)", "test it")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	reqs := m.Requests()
	if got := toolResultText(reqs[1], "call_1"); !strings.Contains(got, "Exit code") {
		t.Errorf("go test did not run: %q", got)
	}
	if got := toolResultText(reqs[2], "call_2"); !strings.Contains(got, "Bash(go test:*)") {
		t.Errorf("rm was not refused naming the rule: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.work, "keep.txt")); err != nil {
		t.Errorf("rm ran: %v", err)
	}
}
