package tool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scriptedApprover answers from a list and records what it was asked.
type scriptedApprover struct {
	answers []Approval
	err     error
	asked   []string
}

func (a *scriptedApprover) Approve(ctx context.Context, req *ApprovalRequest) (Approval, error) {
	a.asked = append(a.asked, req.Session+":"+req.Tool+":"+req.Command)
	if a.err != nil {
		return Approval{}, a.err
	}
	if len(a.answers) == 0 {
		return Approval{Verdict: Deny, Reason: "no more answers"}, nil
	}
	ans := a.answers[0]
	a.answers = a.answers[1:]
	return ans, nil
}

func TestB57_AskWithNoApproverDenies(t *testing.T) {
	p := NewPolicy(nil)
	d, err := p.Decide(context.Background(), &ApprovalRequest{Session: "s", Tool: "write"})
	if err != nil {
		t.Fatal(err)
	}
	want := Decision{Verdict: Deny, Source: "no-approver", Reason: "approval required but no approver is configured"}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestB57_AlwaysLastsForTheSessionOnly(t *testing.T) {
	ctx := context.Background()
	ap := &scriptedApprover{answers: []Approval{{Verdict: Allow, Reason: "looks fine", Always: true}}}
	p := NewPolicy(&PolicyOptions{Approver: ap})

	d, err := p.Decide(ctx, &ApprovalRequest{Session: "s1", Tool: "write"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Decision{Verdict: Allow, Source: "approver", Reason: "looks fine", Remembered: true}, d); diff != "" {
		t.Errorf("first decision (-want +got):\n%s", diff)
	}
	d, _ = p.Decide(ctx, &ApprovalRequest{Session: "s1", Tool: "write"})
	if diff := cmp.Diff(Decision{Verdict: Allow, Source: "session-rule", Reason: "remembered for this session: allow rule for write"}, d); diff != "" {
		t.Errorf("second decision (-want +got):\n%s", diff)
	}
	// Another session is asked again (and the approver has no more yeses).
	d, _ = p.Decide(ctx, &ApprovalRequest{Session: "s2", Tool: "write"})
	if d.Verdict != Deny || d.Source != "approver" {
		t.Errorf("other session: %+v", d)
	}
	if diff := cmp.Diff([]string{"s1:write:", "s2:write:"}, ap.asked); diff != "" {
		t.Errorf("approver asked (-want +got):\n%s", diff)
	}
	p.Forget("s1")
	if len(p.Remembered("s1")) != 0 {
		t.Error("Forget kept the rules")
	}
}

func TestApprovalCommandScope(t *testing.T) {
	ctx := context.Background()
	ap := &scriptedApprover{answers: []Approval{{Verdict: Allow, Always: true, Scope: "go test"}}}
	p := NewPolicy(&PolicyOptions{Approver: ap})
	first, _ := p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "shell", Command: "go test ./..."})
	if first.Verdict != Allow || first.Reason != "approved" {
		t.Fatalf("first: %+v", first)
	}
	tests := []struct {
		command string
		want    Verdict
		source  string
	}{
		{"go test ./tool/...", Allow, "session-rule"},
		{"go test", Allow, "session-rule"},
		{"go testify", Deny, "approver"},
		{"go test ./... && rm -rf /", Deny, "approver"},
		{"go test $(curl evil)", Deny, "approver"},
		{"go vet ./...", Deny, "approver"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			d, _ := p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "shell", Command: tt.command})
			if d.Verdict != tt.want || d.Source != tt.source {
				t.Errorf("Decide(%q) = %+v, want %s from %s", tt.command, d, tt.want, tt.source)
			}
		})
	}
}

func TestApprovalPathScope(t *testing.T) {
	ctx := context.Background()
	ap := &scriptedApprover{answers: []Approval{{Verdict: Allow, Always: true, Scope: "src/gen"}}}
	p := NewPolicy(&PolicyOptions{Approver: ap})
	if d, _ := p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "write", Path: "src/gen/a.go"}); d.Verdict != Allow || !d.Remembered {
		t.Fatalf("first: %+v", d)
	}
	tests := []struct {
		path string
		want Verdict
	}{
		{"src/gen/b.go", Allow},
		{"src/gen/deep/c.go", Allow},
		{"src/gen", Allow},
		{"src/generated/x.go", Deny},
		{"src/gen/../../etc/passwd", Deny},
		{"src/other.go", Deny},
		{"", Deny},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			d, _ := p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "write", Path: tt.path})
			if d.Verdict != tt.want {
				t.Errorf("Decide(%q) = %+v, want %s", tt.path, d, tt.want)
			}
		})
	}
	if rules := p.Remembered("s"); len(rules) != 1 || rules[0].String() != `allow rule for write on paths under "src/gen"` {
		t.Errorf("remembered = %v", rules)
	}
	// A scope that fits neither a command nor a path is not remembered.
	p = NewPolicy(&PolicyOptions{Approver: &scriptedApprover{answers: []Approval{{Verdict: Allow, Always: true, Scope: "whatever"}}}})
	d, _ := p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "fetch"})
	if d.Verdict != Allow || d.Remembered || len(p.Remembered("s")) != 0 {
		t.Errorf("unfitting scope: %+v, rules %v", d, p.Remembered("s"))
	}
}

func TestApprovalRulesAndDefaults(t *testing.T) {
	ctx := context.Background()
	ro := &Annotations{ReadOnly: true}
	tests := []struct {
		name string
		opts *PolicyOptions
		req  ApprovalRequest
		want Decision
	}{
		{"default allow", &PolicyOptions{Default: Allow}, ApprovalRequest{Tool: "x"}, Decision{Verdict: Allow, Source: "default", Reason: "allowed by default"}},
		{"default deny", &PolicyOptions{Default: Deny}, ApprovalRequest{Tool: "x"}, Decision{Verdict: Deny, Source: "default", Reason: "denied by default"}},
		{"read-only allowed", &PolicyOptions{AllowReadOnly: true}, ApprovalRequest{Tool: "read", Annotations: ro}, Decision{Verdict: Allow, Source: "read-only", Reason: "read-only tools are allowed"}},
		{"read-only not allowed unless asked", nil, ApprovalRequest{Tool: "read", Annotations: ro}, Decision{Verdict: Deny, Source: "no-approver", Reason: "approval required but no approver is configured"}},
		{"standing allow", &PolicyOptions{Rules: []Rule{{Tool: "grep", Verdict: Allow}}}, ApprovalRequest{Tool: "grep"}, Decision{Verdict: Allow, Source: "rule", Reason: "standing allow rule for grep"}},
		{"deny beats allow", &PolicyOptions{Default: Allow, Rules: []Rule{{Tool: "*", Verdict: Allow}, {Tool: "shell", CommandPrefix: "rm", Verdict: Deny}}}, ApprovalRequest{Tool: "shell", Command: "rm -rf x"}, Decision{Verdict: Deny, Source: "rule", Reason: `standing deny rule for shell commands starting "rm"`}},
		{"deny rule covers compound commands", &PolicyOptions{Default: Allow, Rules: []Rule{{Tool: "shell", CommandPrefix: "rm", Verdict: Deny}}}, ApprovalRequest{Tool: "shell", Command: "rm x; ls"}, Decision{Verdict: Deny, Source: "rule", Reason: `standing deny rule for shell commands starting "rm"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewPolicy(tt.opts).Decide(ctx, &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, d); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyIsAnApprover(t *testing.T) {
	var ap Approver = NewPolicy(&PolicyOptions{Rules: []Rule{{Tool: "grep", Verdict: Allow}}})
	a, err := ap.Approve(context.Background(), &ApprovalRequest{Tool: "grep"})
	if err != nil || a.Verdict != Allow || a.Reason != "standing allow rule for grep" {
		t.Errorf("Approve(grep) = %+v, %v", a, err)
	}
	a, _ = ap.Approve(context.Background(), &ApprovalRequest{Tool: "rm"})
	if a.Verdict != Deny || a.Reason != "approval required but no approver is configured" {
		t.Errorf("Approve(rm) = %+v", a)
	}
}

func TestApproverFailuresDeny(t *testing.T) {
	ctx := context.Background()
	p := NewPolicy(&PolicyOptions{Approver: &scriptedApprover{err: context.Canceled}})
	d, err := p.Decide(ctx, &ApprovalRequest{Tool: "x"})
	if d.Verdict != Deny || !errors.Is(err, context.Canceled) {
		t.Errorf("approver error: %+v, %v", d, err)
	}
	p = NewPolicy(&PolicyOptions{Approver: ApproverFunc(func(context.Context, *ApprovalRequest) (Approval, error) {
		return Approval{Verdict: Ask}, nil
	})})
	d, err = p.Decide(ctx, &ApprovalRequest{Tool: "x"})
	if err != nil || d.Verdict != Deny || d.Reason != `the approver gave no decision ("ask")` {
		t.Errorf("approver answering ask: %+v, %v", d, err)
	}
	p = NewPolicy(&PolicyOptions{Approver: ApproverFunc(func(context.Context, *ApprovalRequest) (Approval, error) {
		return Approval{Verdict: Deny, Always: true}, nil
	})})
	d, _ = p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "x"})
	if d.Reason != "denied by the approver" || !d.Remembered {
		t.Errorf("deny always: %+v", d)
	}
	d, _ = p.Decide(ctx, &ApprovalRequest{Session: "s", Tool: "x"})
	if d.Verdict != Deny || d.Source != "session-rule" {
		t.Errorf("remembered deny: %+v", d)
	}
}

func TestPolicyAskRuleWinsOverAllow(t *testing.T) {
	asked := 0
	p := NewPolicy(&PolicyOptions{Default: Allow, AllowReadOnly: true,
		Rules: []Rule{
			{Tool: "shell", Verdict: Allow},
			{Tool: "shell", CommandPrefix: "git push", Verdict: Ask, Name: "Bash(git push:*)"},
			{Tool: "shell", CommandPrefix: "git push --force", Verdict: Deny},
		},
		Approver: ApproverFunc(func(ctx context.Context, req *ApprovalRequest) (Approval, error) {
			asked++
			return Approval{Verdict: Deny, Reason: "no"}, nil
		})})
	for _, tt := range []struct {
		cmd   string
		want  Verdict
		asked int
	}{{"git status", Allow, 0}, {"git push origin", Deny, 1}, {"git push --force", Deny, 1}} {
		d, err := p.Decide(context.Background(), &ApprovalRequest{Tool: "shell", Command: tt.cmd})
		if err != nil || d.Verdict != tt.want || asked != tt.asked {
			t.Errorf("%q: %+v, %v, asked %d times; want %s after %d asks", tt.cmd, d, err, asked, tt.want, tt.asked)
		}
	}
}

// TestPolicyHookAskedGoesToTheApprover: a call a hook asked about is put
// to the approver past allow rules, the read-only allowance and an allow
// default; a deny rule still wins; with no approver it is refused; an
// Always answer to it is not remembered.
func TestPolicyHookAskedGoesToTheApprover(t *testing.T) {
	ctx := context.Background()
	rules := []Rule{{Tool: "shell", Verdict: Allow}, {Tool: "shell", CommandPrefix: "rm", Verdict: Deny}}
	var asked []string
	yes := ApproverFunc(func(ctx context.Context, req *ApprovalRequest) (Approval, error) {
		asked = append(asked, req.Command)
		return Approval{Verdict: Allow, Always: true}, nil
	})
	tests := []struct {
		name     string
		opts     PolicyOptions
		req      ApprovalRequest
		want     Verdict
		source   string
		approver bool
	}{
		{"allow rule asks", PolicyOptions{Default: Allow, Rules: rules, Approver: yes}, ApprovalRequest{Session: "s", Tool: "shell", Command: "git push", HookAsked: true}, Allow, "approver", true},
		{"read-only asks", PolicyOptions{Default: Allow, AllowReadOnly: true, Approver: yes}, ApprovalRequest{Session: "s", Tool: "read", Annotations: &Annotations{ReadOnly: true}, HookAsked: true}, Allow, "approver", true},
		{"deny rule wins", PolicyOptions{Default: Allow, Rules: rules, Approver: yes}, ApprovalRequest{Session: "s", Tool: "shell", Command: "rm -rf x", HookAsked: true}, Deny, "rule", false},
		{"no approver refuses", PolicyOptions{Default: Allow, Rules: rules}, ApprovalRequest{Session: "s", Tool: "shell", Command: "git push", Reason: "pushing", HookAsked: true}, Deny, "no-approver", false},
		{"not asked: the rule allows", PolicyOptions{Default: Deny, Rules: rules, Approver: yes}, ApprovalRequest{Session: "s", Tool: "shell", Command: "git push"}, Allow, "rule", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			p := NewPolicy(&tt.opts)
			d, err := p.Decide(ctx, &tt.req)
			if err != nil || d.Verdict != tt.want || d.Source != tt.source {
				t.Fatalf("Decide = %+v, %v; want %s from %s", d, err, tt.want, tt.source)
			}
			if got := len(asked) == 1; got != tt.approver {
				t.Errorf("approver asked %d times, want asked: %v", len(asked), tt.approver)
			}
			if d.Remembered || len(p.Remembered("s")) != 0 {
				t.Errorf("an answer to a hook's question was remembered: %+v", p.Remembered("s"))
			}
			if tt.source == "no-approver" && !strings.Contains(d.Reason, "pushing") {
				t.Errorf("reason %q does not name the hook's reason", d.Reason)
			}
		})
	}
}
