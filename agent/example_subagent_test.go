package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agentdef"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/tool"
)

// A parent agent with the spawn tool starts two named children in one
// step; they run in parallel, each in its own session, and their answers
// come back as the tool results.
func ExampleSpawnTool() {
	defs := []agentdef.Definition{
		{Name: "researcher", Description: "Finds facts.", Prompt: "You find facts."},
		{Name: "reviewer", Description: "Checks a plan.", Prompt: "You check plans."},
	}
	// One scripted model serves all three agents: a child's request is
	// told apart by its system prompt, the definition's.
	parent := []llmtest.Entry{
		llmtest.CallTools(
			llm.ToolCall{ID: "c1", Name: agent.SpawnToolName, Args: []byte(`{"task":"Find the release date.","agent":"researcher"}`)},
			llm.ToolCall{ID: "c2", Name: agent.SpawnToolName, Args: []byte(`{"task":"Check the rollout plan.","agent":"reviewer"}`)},
		),
		llmtest.Reply("Ship on Friday; the plan is sound."),
	}
	children := map[string]llmtest.Entry{"You find facts.": llmtest.Reply("Friday."), "You check plans.": llmtest.Reply("Sound.")}
	var step atomic.Int32
	route := llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		if e, ok := children[req.System[0].Text]; ok {
			return e
		}
		return parent[step.Add(1)-1]
	})
	a, err := agent.New(&agent.Options{
		Model:  llmtest.NewModel(route, route, route, route),
		System: "You plan releases.",
		Tools:  []tool.Tool{agent.SpawnTool(&agent.SpawnToolOptions{Definitions: defs})},
	})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "When do we ship?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	var names []string
	for _, c := range res.Children {
		names = append(names, fmt.Sprintf("%s %s", c.Name, c.Reason))
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// Ship on Friday; the plan is sound.
	// [researcher completed reviewer completed]
}
