package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agentdef"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// spawnTool is the spawn_agent tool of 'rein run' and 'rein chat' (named
// in --tools), offering the named agents of the workspace's .rein/agents/
// and .claude/agents/ and of the user's config folder. models resolves a
// definition's model (nil: children run on the session's model).
func spawnTool(root string, models func(string) (*agent.Target, error)) (tool.Tool, error) {
	defs, err := agentdef.Discover(&agentdef.DiscoverOptions{Workspace: root, UserDir: filepath.Join(configDir(), "agents")})
	if err != nil {
		return nil, fmt.Errorf("agent definitions: %w", err)
	}
	return agent.SpawnTool(&agent.SpawnToolOptions{Definitions: defs, Models: models}), nil
}

// childModels resolves the model a subagent definition names the way
// --model is resolved, aliases included ("haiku", "claude-haiku-4-5"). A
// name without a provider the catalog does not know is the parent's
// provider's; a model of the parent's provider goes to the parent's
// --base-url, with the parent's network timeouts.
func (a *app) childModels(parent target, net netOptions) func(string) (*agent.Target, error) {
	return func(name string) (*agent.Target, error) {
		spec := expandModel(name)
		prov, _, hasProvider := strings.Cut(spec, "/")
		if !hasProvider {
			spec, prov = parent.provider.name+"/"+spec, parent.provider.name
		}
		base := ""
		if prov == parent.provider.name {
			base = parent.baseURL
		}
		t, err := resolveTarget(spec, base, a.cfg, a.getenv)
		if err != nil {
			return nil, err
		}
		m, err := buildModel(t, providerClient(net))
		if err != nil {
			return nil, err
		}
		return &agent.Target{Provider: t.provider.name, Model: t.model, Client: failFast(m)}, nil
	}
}

// childView shows the events of subagents, which the run's stream
// yields beside its own (RunRequest.Children), with the run's renderer:
// --json prints them as they are (their session, agent and parent_run
// say whose they are), text output prints their tool calls and ends
// indented under the parent's, named.
type childView struct {
	lin agent.Lineage
}

// show renders one child event with r.
func (v *childView) show(r renderer, ev session.Event) {
	depth := v.lin.Depth(ev)
	switch r := r.(type) {
	case *jsonRenderer:
		r.event(ev)
	case *textRenderer:
		childLine(r, ev, strings.Repeat("  ", depth)+"["+ev.Agent+"] ")
	}
}

// childLine prints one child event of note.
func childLine(r *textRenderer, ev session.Event, prefix string) {
	switch d := ev.Data.(type) {
	case *session.ToolCall:
		fmt.Fprintf(r.info, "%s→ %s %s\n", prefix, d.Name, shortArgs(d.Args))
	case *session.ToolResult:
		outcome := "ok"
		if d.IsError {
			outcome = "error: " + firstLine(resultText(d.Parts))
		}
		fmt.Fprintf(r.info, "%s  %s %s\n", prefix, d.Name, shorten(outcome, 100))
	case *session.TurnEnd:
		fmt.Fprintf(r.info, "%sended %s\n", prefix, d.Reason)
	}
}

// writeChildren prints the tree of the subagents events started, read
// from their own sessions: name, session, how each ended and what it
// cost, its own children indented under it.
func writeChildren(ctx context.Context, w io.Writer, st session.Store, events []session.Event, indent string) error {
	ends := map[session.ID]*session.SubagentEnd{}
	var starts []*session.SubagentStart
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *session.SubagentStart:
			starts = append(starts, d)
		case *session.SubagentEnd:
			ends[d.ChildSession] = d
		}
	}
	if len(starts) > 0 && indent == "" {
		fmt.Fprintf(w, "subagents:\n")
	}
	for _, s := range starts {
		how := "no recorded end"
		if e := ends[s.ChildSession]; e != nil {
			how = string(e.Reason)
			if e.Cause != "" {
				how += " (" + e.Cause + ")"
			}
			how += fmt.Sprintf(", %s, %s", plural(e.Steps, "step"), plural(int(e.Usage.Total()), "token"))
			if e.Cost > 0 {
				how += fmt.Sprintf(", $%.4f", e.Cost)
			}
		}
		kind := ""
		if s.Fork {
			kind = " fork"
		}
		fmt.Fprintf(w, "%s  %s%s (session %s): %s\n", indent, s.Name, kind, s.ChildSession, how)
		child, err := collect(st.Events(ctx, s.ChildSession, 0))
		if err != nil {
			return fmt.Errorf("read the subagent session %s: %w", s.ChildSession, err)
		}
		if err := writeChildren(ctx, w, st, child, indent+"  "); err != nil {
			return err
		}
	}
	return nil
}
