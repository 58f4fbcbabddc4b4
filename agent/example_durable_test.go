package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// A durable turn that the host suspends while the model answers (say,
// on shutdown), and that a second agent over the same store resumes: the
// call the model asked for runs then, and the model is asked once more.
func ExampleAgent_Resume() {
	ctx := context.Background()
	store := session.NewMemStore()
	defer store.Close()
	clock := &tool.Func{
		ToolSpec: tool.Spec{Name: "clock", Description: "The time of day.", Schema: json.RawMessage(`{"type":"object"}`), Annotations: &tool.Annotations{ReadOnly: true}},
		Fn:       func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("12:00"), nil },
	}
	var first *agent.Agent
	model := llmtest.NewModel(
		llmtest.Respond(func(*llm.Request) llmtest.Entry {
			first.Suspend(0) // the host is shutting down
			return llmtest.CallTool("c1", "clock", `{}`)
		}),
		llmtest.Reply("It is noon."),
	)
	opts := agent.Options{Model: model, ModelName: "scripted", Tools: []tool.Tool{clock}, Store: store, Session: "s", Durable: true}
	first, err := agent.New(&opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := first.Run(ctx, &agent.RunRequest{Prompt: "What time is it?"})
	fmt.Println(res.Reason, model.Calls())
	first.Close()

	// Later, perhaps in another process: the same tools, model and version.
	second, err := agent.New(&opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close()
	res, err = second.Resume(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Reason, model.Calls(), res.Text)
	// Output:
	// suspended 1
	// completed 2 It is noon.
}
