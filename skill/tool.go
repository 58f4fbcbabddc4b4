package skill

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/tool"
)

// ToolName is the name of the tool the model activates skills with.
const ToolName = "skill"

type toolArgs struct {
	Name       string `json:"name" jsonschema:"the skill's name, as the skills catalog lists it"`
	Path       string `json:"path,omitempty" jsonschema:"a file in the active skill's folder to load, relative to it; leave out to activate the skill"`
	Deactivate bool   `json:"deactivate,omitempty" jsonschema:"end the skill: its instructions and tool allowances no longer apply"`
}

const toolDescription = `Load a skill: its instructions for a kind of task, listed in the skills catalog of the system prompt.
Call it with the skill's name before starting a task the skill is for, and follow the instructions it returns.
With path, it returns one file of an active skill's folder (a reference or template the instructions name).
With deactivate, the skill ends when its task is done.`

// Tool returns the tool the model activates, reads and deactivates
// skills with. It is read-only: it reads the skill folders and changes
// nothing but which skills are active.
func (a *Activator) Tool() (tool.Tool, error) {
	t, err := tool.New(ToolName, toolDescription, a.call, &tool.Options{
		Annotations: &tool.Annotations{ReadOnly: true, Idempotent: true},
	})
	if err != nil {
		return nil, fmt.Errorf("skill: the tool: %w", err)
	}
	return t, nil
}

func (a *Activator) call(_ context.Context, in toolArgs, call *tool.Call) (*tool.Result, error) {
	switch {
	case in.Deactivate:
		if err := a.Deactivate(call.Session, in.Name, ViaTool); err != nil {
			return tool.Errorf("%v", err), nil
		}
		return tool.Text(fmt.Sprintf("Skill %s is deactivated: its instructions no longer apply.", in.Name)), nil
	case in.Path != "":
		text, err := a.ReadFile(call.Session, in.Name, in.Path)
		if err != nil {
			return tool.Errorf("%v", err), nil
		}
		return tool.Text(text), nil
	}
	ac, err := a.Activate(call.Session, in.Name, ViaTool)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	return tool.Text(ac.Text()), nil
}
