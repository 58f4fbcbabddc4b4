package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/skill"
	"github.com/reinhq/rein/tool"
)

// teamKit is what a workspace's own agent setup adds to a run: its
// memory files and skills.
type teamKit struct {
	mem    *skill.Memory
	skills *skill.Library
	act    *skill.Activator // nil without skills
	tool   tool.Tool        // nil without tools or skills the model may start
}

// homeDir is the user's home directory, or "" when unknown.
func homeDir() string {
	h, _ := os.UserHomeDir()
	return h
}

// loadMemory reads the workspace's memory files and the user's.
func loadMemory(root string) (*skill.Memory, error) {
	m, err := skill.LoadMemory(&skill.MemoryRequest{Workspace: root, UserConfig: configDir(), Home: homeDir()})
	if err != nil {
		return nil, fmt.Errorf("memory files: %w", err)
	}
	return m, nil
}

// discoverSkills finds the skills of the workspace, the user and the
// workspace's plugins.
func discoverSkills(root string) *skill.Library {
	return skill.Discover(skill.Roots(&skill.RootsRequest{
		Workspace: root, UserConfig: configDir(), Home: homeDir(),
		Plugins: command.PluginDirs(root, true),
	}))
}

// loadTeam reads the memory files and skills of root. The skill tool
// and the catalog are offered when the run has tools and a skill the
// model may activate; a /NAME prompt starts any skill.
func loadTeam(root string, toolNames []string) (*teamKit, error) {
	mem, err := loadMemory(root)
	if err != nil {
		return nil, err
	}
	k := &teamKit{mem: mem, skills: discoverSkills(root)}
	if len(k.skills.Skills()) == 0 {
		return k, nil
	}
	k.act = skill.NewActivator(k.skills, nil)
	if len(toolNames) > 0 && k.skills.Catalog() != "" {
		if k.tool, err = k.act.Tool(); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// sections are the system prompt's parts after rein's own: each memory
// file under its path (the first after skill.MemoryPreface), then the
// skills catalog. Both are read once, so
// the prompt is the same bytes at every step.
func (k *teamKit) sections() []agent.SystemSection {
	var out []agent.SystemSection
	for i, f := range k.mem.Files() {
		text := f.Render()
		if i == 0 {
			text = skill.MemoryPreface + "\n\n" + text
		}
		out = append(out, agent.SystemSection{Kind: agent.SectionRules, Name: f.Path, Text: text})
	}
	if k.tool != nil {
		out = append(out, agent.SystemSection{Kind: agent.SectionSkills, Name: "catalog", Text: k.skills.Catalog()})
	}
	return out
}

// tools is the skill tool, when offered.
func (k *teamKit) tools() []tool.Tool {
	if k.tool == nil {
		return nil
	}
	return []tool.Tool{k.tool}
}

// records are the skill activations of session sid since the last call.
func (k *teamKit) records(sid session.ID) []session.Payload {
	if k.act == nil {
		return nil
	}
	return k.act.Records(string(sid))
}

// records is the agent's source of host records for session sid: the
// sandbox's, the MCP servers' lifecycle and the skill activations.
func (s *setup) records(sid session.ID) func() []session.Payload {
	return func() []session.Payload {
		return append(append(s.box.records(), s.mcpLog.drain()...), s.team.records(sid)...)
	}
}

// parts turns a prompt of the form /NAME [ARGUMENTS], NAME a skill's,
// into the host's activation of that skill: its instructions, then the
// arguments as the request. Any other prompt is returned as it is.
func (k *teamKit) parts(sid session.ID, prompt string) ([]llm.Part, bool) {
	if k == nil || k.act == nil {
		return nil, false
	}
	name, args, ok := strings.Cut(strings.TrimSpace(prompt), " ")
	name, ok = strings.CutPrefix(name, "/")
	if !ok {
		return nil, false
	}
	if _, known := k.skills.Lookup(name); !known {
		return nil, false
	}
	ac, err := k.act.Activate(string(sid), name, skill.ViaHost)
	if err != nil {
		return []llm.Part{&llm.Text{Text: prompt + "\n\n(rein could not start the skill: " + err.Error() + ")"}}, true
	}
	text := ac.Text() + "\n\nThe user started the skill " + name + "."
	if args = strings.TrimSpace(args); args != "" {
		text += " Their request: " + args
	}
	return []llm.Part{&llm.Text{Text: text}}, true
}

// approver lets the calls an active skill's allowed-tools cover run
// without asking, unless a deny or ask rule covers them or a hook asked.
// rules are the run's permission rules; next decides everything else.
func (k *teamKit) approver(next tool.Approver, rules []tool.Rule) tool.Approver {
	if k.act == nil {
		return next
	}
	var guards []tool.Rule
	for _, r := range rules {
		if r.Verdict != tool.Allow {
			guards = append(guards, r)
		}
	}
	return &skillApprover{act: k.act, next: next, guards: tool.NewPolicy(&tool.PolicyOptions{Default: tool.Allow, Rules: guards})}
}

type skillApprover struct {
	act    *skill.Activator
	next   tool.Approver
	guards *tool.Policy // the deny and ask rules; allows what none covers
}

func (s *skillApprover) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	if req.HookAsked {
		return s.next.Approve(ctx, req)
	}
	for _, sk := range s.act.Active(req.Session) {
		for _, spec := range sk.AllowedTools {
			rs, err := parsePermission(spec, tool.Allow)
			if err != nil {
				continue // listed by 'rein skills list'
			}
			p := tool.NewPolicy(&tool.PolicyOptions{Default: tool.Deny, Rules: rs})
			if d, _ := p.Decide(ctx, req); d.Verdict != tool.Allow {
				continue
			}
			if d, _ := s.guards.Decide(ctx, &tool.ApprovalRequest{Tool: req.Tool, Command: req.Command, Path: req.Path}); d.Verdict != tool.Allow {
				return s.next.Approve(ctx, req) // a deny or ask rule wins over a skill's allowance
			}
			return tool.Approval{Verdict: tool.Allow, Reason: "allowed while skill " + sk.Name + " is active (allowed-tools " + spec + ")"}, nil
		}
	}
	return s.next.Approve(ctx, req)
}

// showMemory lists the memory files in the order the model reads them,
// and those named but not read, with why.
func showMemory(w io.Writer, m *skill.Memory) {
	fmt.Fprintln(w, "# Context files")
	if len(m.Files()) == 0 {
		fmt.Fprintln(w, "(none: add AGENTS.md or CLAUDE.md to the workspace or a parent up to the repository root)")
	}
	for _, f := range m.Files() {
		if f.ImportedBy != "" {
			fmt.Fprintf(w, "%s (%s, imported by %s)\n", f.Path, f.Scope, f.ImportedBy)
			continue
		}
		fmt.Fprintf(w, "%s (%s)\n", f.Path, f.Scope)
	}
	for _, s := range m.Skipped() {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Path, s.Reason)
	}
}

// showBreakdown prints the context breakdown of a first request: each
// system section (each memory file under its path, the skills catalog),
// the tools and their sizes. No model is called.
func showBreakdown(ctx context.Context, w io.Writer, sys string, team *teamKit, tools []tool.Tool) error {
	never := llm.ModelFunc(func(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
		return func(yield func(llm.Chunk, error) bool) { yield(nil, errors.New("rein: no model is called here")) }
	})
	ag, err := agent.New(&agent.Options{Model: never, ModelName: "(any)", System: sys, SystemSections: team.sections(), Tools: append(tools, team.tools()...)})
	if err != nil {
		return fmt.Errorf("context breakdown: %w", err)
	}
	defer ag.Close()
	b, err := ag.Context(ctx)
	if err != nil {
		return fmt.Errorf("context breakdown: %w", err)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "# Context breakdown")
	fmt.Fprint(w, b.String())
	return nil
}
