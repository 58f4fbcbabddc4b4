package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/agent/agentdef"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// SpawnToolName is the spawn tool's default name.
const SpawnToolName = "spawn_agent"

// SpawnToolOptions configures SpawnTool.
type SpawnToolOptions struct {
	// Name is the tool's name; empty means SpawnToolName.
	Name string
	// Definitions are the named subagents the model may start; their
	// names and descriptions are in the tool's description.
	Definitions []agentdef.Definition
	// Models resolves a definition's model name to a target. Nil, or a
	// nil target, runs the child on the parent's models.
	Models func(name string) (*Target, error)
}

type spawnArgs struct {
	Task  string `json:"task"`
	Agent string `json:"agent,omitempty"`
	Label string `json:"label,omitempty"`
	Fork  bool   `json:"fork,omitempty"`
}

// SpawnTool returns the model-facing tool that starts a child agent with
// Spawn, in the run that calls it: the tool's result is the child's final
// answer (its JSON for a structured one), or an error result saying how
// the child ended or why the spawn was refused. Give it to any agent in
// Options.Tools; a child that is given it too may spawn its own, within
// Options.Subagents' depth limit.
func SpawnTool(o *SpawnToolOptions) tool.Tool {
	if o == nil {
		o = &SpawnToolOptions{}
	}
	st := &spawnTool{o: *o, defs: map[string]agentdef.Definition{}}
	if st.o.Name == "" {
		st.o.Name = SpawnToolName
	}
	for _, d := range o.Definitions {
		st.defs[d.Name] = d
	}
	st.s = st.spec()
	return st
}

type spawnTool struct {
	o    SpawnToolOptions
	defs map[string]agentdef.Definition
	s    tool.Spec
}

// Spec describes the tool and lists the named agents.
func (st *spawnTool) Spec() tool.Spec { return st.s }

func (st *spawnTool) spec() tool.Spec {
	var b strings.Builder
	b.WriteString("Start a subagent: a separate agent that does one task with its own context and returns its final answer as this tool's result. ")
	b.WriteString("Give it a complete, self-contained task. Calls in one response run in parallel. ")
	b.WriteString("With fork true it starts from this conversation so far instead of an empty one.")
	if len(st.o.Definitions) > 0 {
		b.WriteString("\n\nNamed agents (set agent to one of these names):")
		for _, d := range st.o.Definitions {
			fmt.Fprintf(&b, "\n- %s: %s", d.Name, d.Description)
		}
	}
	schema := `{"type":"object","properties":{` +
		`"task":{"type":"string","description":"What the subagent should do and what to report back."},` +
		`"agent":{"type":"string","description":"A named agent to run; omit for a general subagent."},` +
		`"label":{"type":"string","description":"A short name for this subagent, shown to the user."},` +
		`"fork":{"type":"boolean","description":"Start from this conversation so far."}},` +
		`"required":["task"],"additionalProperties":false}`
	// The spawn itself changes nothing: each of the child's calls is
	// decided by the enforcement and approver it inherits.
	return tool.Spec{Name: st.o.Name, Description: b.String(), Schema: json.RawMessage(schema),
		Annotations: &tool.Annotations{ReadOnly: true}}
}

// Call starts the child and answers with its final answer.
func (st *spawnTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var args spawnArgs
	if res := tool.DecodeArgs(call, &args); res != nil {
		return res, nil
	}
	r := runOf(ctx)
	if r == nil {
		return tool.Errorf("Tool error: %s runs only inside an agent's run", st.o.Name), nil
	}
	req, res := st.request(&args, call)
	if res != nil {
		return res, nil
	}
	out, err := r.a.Spawn(ctx, req)
	switch {
	case out == nil && errors.Is(err, ErrSpawnRefused):
		return tool.Errorf("%v", err), nil
	case out == nil:
		return nil, err
	case out.Reason != session.EndCompleted:
		msg := fmt.Sprintf("The subagent %s ended %s", req.Name, out.Reason)
		if out.Cause != "" {
			msg += " (" + out.Cause + ")"
		}
		if err != nil {
			msg += ": " + err.Error()
		}
		if out.Text != "" {
			msg += "\nIts last answer: " + out.Text
		}
		return tool.Errorf("%s", msg), nil
	case len(out.Output) > 0:
		return tool.Text(string(out.Output)), nil
	}
	return tool.Text(out.Text), nil
}

// request builds the spawn of a call; a result explains bad arguments.
func (st *spawnTool) request(args *spawnArgs, call *tool.Call) (*SpawnRequest, *tool.Result) {
	if strings.TrimSpace(args.Task) == "" {
		return nil, tool.Errorf("Validation error: task is empty; say what the subagent should do")
	}
	req := &SpawnRequest{Name: args.Label, Prompt: args.Task, Fork: args.Fork, CallID: call.ID}
	if args.Agent == "" {
		return req, nil
	}
	d, ok := st.defs[args.Agent]
	if !ok {
		names := make([]string, 0, len(st.o.Definitions))
		for _, d := range st.o.Definitions {
			names = append(names, d.Name)
		}
		if len(names) == 0 {
			return nil, tool.Errorf("There is no agent named %q: no named agents are defined; omit agent", args.Agent)
		}
		return nil, tool.Errorf("There is no agent named %q; the named agents are: %s", args.Agent, strings.Join(names, ", "))
	}
	if req.Name == "" {
		req.Name = d.Name
	}
	if !req.Fork {
		req.System, req.Tools = d.Prompt, d.Tools
	}
	if d.Model != "" && st.o.Models != nil {
		t, err := st.o.Models(d.Model)
		if err != nil {
			return nil, tool.Errorf("The agent %s names the model %q, which cannot be used: %v", d.Name, d.Model, err)
		}
		req.Target = t
	}
	return req, nil
}
