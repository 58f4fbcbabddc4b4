package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/llm"
)

// Verdict is an approval outcome.
type Verdict string

// Verdicts. Ask defers to an Approver; with none, it is a deny.
const (
	Allow Verdict = "allow"
	Deny  Verdict = "deny"
	Ask   Verdict = "ask"
)

// ApprovalRequest is a tool call waiting for permission to run.
type ApprovalRequest struct {
	Session     string
	CallID      llm.CallID
	Tool        string          // the tool's real name
	Args        json.RawMessage // validated arguments
	Annotations *Annotations
	Command     string // the command line, for shell tools
	Path        string // the path acted on, for file tools
	Reason      string // why approval is needed
	// HookAsked is set when an approval handler (a hook) answered Ask:
	// the call must be put to someone, whatever a policy's default or
	// allow rules say, and with no one to ask it is refused.
	HookAsked bool
}

// Approval is an Approver's answer.
type Approval struct {
	Verdict Verdict
	Reason  string
	// Always remembers the verdict for the rest of the session.
	Always bool
	// Scope limits what Always remembers: empty or the tool's name covers
	// every call of the tool; anything else is a command prefix when the
	// request has a Command (covering the tool's calls whose Command
	// starts with it, whole words) and a path prefix when it has a Path
	// (covering the tool's calls on paths under it).
	Scope string
}

// Approver asks someone (a person, a policy service) whether a call may
// run. Approve blocks until it has an answer or ctx is done. An Approver
// must be safe for concurrent use.
type Approver interface {
	Approve(ctx context.Context, req *ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req *ApprovalRequest) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req *ApprovalRequest) (Approval, error) {
	return f(ctx, req)
}

// Rule is a standing approval decision.
type Rule struct {
	// Tool is the real tool name the rule covers; "*" covers every tool.
	Tool string
	// CommandPrefix, when set, limits the rule to calls whose Command is
	// the prefix or starts with it followed by a space. An allow rule with
	// a prefix never covers a command that chains or redirects (;, &&,
	// ||, |, &, `, $(, <, >, newline): those are asked about.
	CommandPrefix string
	// PathPrefix, when set, limits the rule to calls whose Path is the
	// prefix or lies under it (whole path elements). An allow rule with a
	// prefix never covers a path with a ".." element.
	PathPrefix string
	Verdict    Verdict
	// Name is the rule as its author wrote it (e.g. "Bash(go test:*)"),
	// shown in decision reasons; empty means a description is made up.
	Name string
}

func (r *Rule) covers(req *ApprovalRequest) bool {
	if r.Tool != "*" && r.Tool != req.Tool {
		return false
	}
	if r.PathPrefix != "" && !r.coversPath(req.Path) {
		return false
	}
	if r.CommandPrefix == "" {
		return true
	}
	cmd := strings.TrimSpace(req.Command)
	if cmd != r.CommandPrefix && !strings.HasPrefix(cmd, r.CommandPrefix+" ") {
		return false
	}
	return r.Verdict != Allow || !compound(cmd)
}

func (r *Rule) coversPath(p string) bool {
	if p == "" {
		return false
	}
	if r.Verdict == Allow && slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return false
	}
	p, prefix := path.Clean(filepath.ToSlash(p)), path.Clean(filepath.ToSlash(r.PathPrefix))
	return p == prefix || prefix == "/" && strings.HasPrefix(p, "/") || strings.HasPrefix(p, prefix+"/") || prefix == "." && !strings.HasPrefix(p, "/")
}

// String describes the rule for decision reasons, e.g.
// `allow rule for shell commands starting "go test"`.
func (r *Rule) String() string {
	if r.Name != "" {
		return fmt.Sprintf("%s rule %s", r.Verdict, r.Name)
	}
	if r.CommandPrefix != "" {
		return fmt.Sprintf("%s rule for %s commands starting %q", r.Verdict, r.Tool, r.CommandPrefix)
	}
	if r.PathPrefix != "" {
		return fmt.Sprintf("%s rule for %s on paths under %q", r.Verdict, r.Tool, r.PathPrefix)
	}
	return fmt.Sprintf("%s rule for %s", r.Verdict, r.Tool)
}

// compound reports whether a shell command does more than run one
// program, so a prefix rule cannot vouch for all of it.
func compound(cmd string) bool {
	return strings.ContainsAny(cmd, ";|&`<>\n\r") || strings.Contains(cmd, "$(")
}

// PolicyOptions configures NewPolicy. A nil *PolicyOptions is the zero
// value: every call is asked about, and with no Approver, denied.
type PolicyOptions struct {
	// Default is the verdict for calls no rule covers; zero means Ask.
	Default Verdict
	// AllowReadOnly allows tools annotated read-only without asking.
	AllowReadOnly bool
	// Rules are standing decisions, checked before Default: any deny rule
	// that covers a call wins over ask rules, and ask rules over allow
	// rules; a call an ask rule covers goes to the Approver.
	Rules []Rule
	// Approver answers Ask; nil means Ask is a deny.
	Approver Approver
}

// Decision is a Policy's answer: always Allow or Deny, with why.
type Decision struct {
	Verdict Verdict
	Reason  string
	// Source says what decided: "rule", "session-rule", "read-only",
	// "default", "approver" or "no-approver".
	Source string
	// Remembered is set when the approver's answer became a session rule.
	Remembered bool
}

// Policy decides whether tool calls may run. Rules remembered from an
// Approval with Always hold for that session only. A Policy is safe for
// concurrent use.
type Policy struct {
	opts PolicyOptions

	mu      sync.Mutex
	session map[string][]Rule // session id → remembered rules
}

// NewPolicy returns a policy.
func NewPolicy(opts *PolicyOptions) *Policy {
	p := &Policy{session: make(map[string][]Rule)}
	if opts != nil {
		p.opts = *opts
		p.opts.Rules = append([]Rule(nil), opts.Rules...)
	}
	if p.opts.Default == "" {
		p.opts.Default = Ask
	}
	return p
}

// Decide returns the verdict for req. Order: deny rules (session, then
// standing), ask rules (which go to the Approver), allow rules (session,
// then standing), read-only tools when
// allowed, then the default; Ask goes to the Approver. A request a hook
// asked about (HookAsked) skips the allow rules, the read-only allowance
// and the default: past the deny rules it goes to the Approver, and its
// answer is never remembered. An Approver's error,
// or an answer other than allow or deny, is a deny: the returned Decision
// is always usable, and err, when set, says what failed.
func (p *Policy) Decide(ctx context.Context, req *ApprovalRequest) (Decision, error) {
	p.mu.Lock()
	remembered := append([]Rule(nil), p.session[req.Session]...)
	p.mu.Unlock()

	asked := req.HookAsked
rules:
	for _, verdict := range []Verdict{Deny, Ask, Allow} {
		if verdict == Allow && req.HookAsked {
			break // a hook's question is not answered by an allow rule
		}
		for i := range remembered {
			if r := &remembered[i]; r.Verdict == verdict && r.covers(req) {
				return Decision{Verdict: verdict, Source: "session-rule", Reason: "remembered for this session: " + r.String()}, nil
			}
		}
		for i := range p.opts.Rules {
			if r := &p.opts.Rules[i]; r.Verdict == verdict && r.covers(req) {
				if verdict == Ask {
					asked = true
					break rules
				}
				return Decision{Verdict: verdict, Source: "rule", Reason: "standing " + r.String()}, nil
			}
		}
	}
	if !asked {
		if p.opts.AllowReadOnly && req.Annotations != nil && req.Annotations.ReadOnly {
			return Decision{Verdict: Allow, Source: "read-only", Reason: "read-only tools are allowed"}, nil
		}
		switch p.opts.Default {
		case Allow:
			return Decision{Verdict: Allow, Source: "default", Reason: "allowed by default"}, nil
		case Ask:
		default:
			return Decision{Verdict: Deny, Source: "default", Reason: "denied by default"}, nil
		}
	}
	if p.opts.Approver == nil {
		if req.HookAsked {
			return Decision{Verdict: Deny, Source: "no-approver", Reason: "a hook asks for approval (" + req.Reason + ") and there is no approver to ask"}, nil
		}
		return Decision{Verdict: Deny, Source: "no-approver", Reason: "approval required but no approver is configured"}, nil
	}
	a, err := p.opts.Approver.Approve(ctx, req)
	if err != nil {
		return Decision{Verdict: Deny, Source: "approver", Reason: "approval failed: " + err.Error()},
			fmt.Errorf("tool: approve %s: %w", req.Tool, err)
	}
	d := Decision{Verdict: a.Verdict, Source: "approver", Reason: a.Reason}
	switch a.Verdict {
	case Allow:
		if d.Reason == "" {
			d.Reason = "approved"
		}
	case Deny:
		if d.Reason == "" {
			d.Reason = "denied by the approver"
		}
	default:
		return Decision{Verdict: Deny, Source: "approver", Reason: fmt.Sprintf("the approver gave no decision (%q)", a.Verdict)}, nil
	}
	if a.Always {
		p.remember(req, a, &d)
	}
	return d, nil
}

// remember keeps an approver's Always answer as a session rule, scoped
// as it asked; an answer to a hook's question is never kept.
func (p *Policy) remember(req *ApprovalRequest, a Approval, d *Decision) {
	if req.HookAsked {
		d.Reason += " (not remembered: the answer to a hook's question covers this call only)"
		return
	}
	r := Rule{Tool: req.Tool, Verdict: a.Verdict}
	if scope := strings.TrimSpace(a.Scope); scope != "" && scope != req.Tool {
		switch {
		case req.Command != "":
			r.CommandPrefix = scope
		case req.Path != "":
			r.PathPrefix = scope
		default:
			// A scope that fits nothing in the request is not widened to
			// the whole tool.
			d.Reason += " (not remembered: the scope fits neither a command nor a path)"
			return
		}
	}
	p.mu.Lock()
	p.session[req.Session] = append(p.session[req.Session], r)
	p.mu.Unlock()
	d.Remembered = true
}

// Approve makes a Policy an Approver, so a host that takes an Approver
// gains the policy's rules and session memory: the Approval carries the
// Decision's verdict (allow or deny) and reason.
func (p *Policy) Approve(ctx context.Context, req *ApprovalRequest) (Approval, error) {
	d, err := p.Decide(ctx, req)
	return Approval{Verdict: d.Verdict, Reason: d.Reason}, err
}

// Forget drops the rules remembered for session, for example when it
// ends.
func (p *Policy) Forget(session string) {
	p.mu.Lock()
	delete(p.session, session)
	p.mu.Unlock()
}

// Remembered returns the rules remembered for session, in order.
func (p *Policy) Remembered(session string) []Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Rule(nil), p.session[session]...)
}
