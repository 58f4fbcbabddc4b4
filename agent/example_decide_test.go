package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
)

// A host asks a cheap model for a typed decision and falls back when
// there is none; the decision, with its cost, is on the session log.
func ExampleAgent_Decide() {
	cheap := llmtest.NewModel(llmtest.Reply(`{"choice":"refactor","reason":"the function is too long"}`))
	a, err := agent.New(&agent.Options{
		Model:   llmtest.NewModel(),
		Decider: &agent.Target{Provider: "llmtest", Model: "small", Client: cheap},
	})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	v, err := a.Decide(context.Background(), &agent.DecideRequest{
		Kind:     agent.DecideChoice,
		Question: "What should the next step be?",
		Options:  []string{"test", "refactor", "ship"},
	})
	if errors.Is(err, agent.ErrUndecided) {
		fmt.Println("no decision; asking a person")
		return
	}
	fmt.Println(v.Choice, "-", v.Reason)
	// Output: refactor - the function is too long
}
