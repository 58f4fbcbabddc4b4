package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/tool"
)

// An agent with one typed tool, a gate hook and a JSONL store, run
// against a scripted model.
func Example() {
	dir, _ := os.MkdirTemp("", "rein-example")
	defer os.RemoveAll(dir)
	store, err := jsonl.Open(dir, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	type WeatherIn struct {
		City string `json:"city" jsonschema:"the city to look up"`
	}
	weather, err := tool.New("weather", "Current weather of a city.",
		func(ctx context.Context, in WeatherIn, call *tool.Call) (*tool.Result, error) {
			return tool.Text("18°C and clear in " + in.City), nil
		}, &tool.Options{Annotations: &tool.Annotations{ReadOnly: true}})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The gate keeps the model to the cities it may look up.
	hooks := new(hook.Set).ToolGate("cities", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if strings.Contains(string(in.Call.Args), "Atlantis") {
			return &hook.Deny{Reason: "Atlantis is not on the map"}, nil
		}
		return nil, nil
	})

	model := llmtest.NewModel(
		llmtest.CallTools(call("c1", "weather", `{"city":"Lyon"}`), call("c2", "weather", `{"city":"Atlantis"}`)),
		llmtest.Reply("Lyon is 18°C and clear; I cannot look up Atlantis."),
	)
	a, err := agent.New(&agent.Options{Model: model, Provider: "llmtest", ModelName: "scripted", Tools: []tool.Tool{weather}, Hooks: hooks, Store: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()

	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "Weather in Lyon and Atlantis?"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text)
	for ev, err := range store.Events(context.Background(), a.Session(), 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if r, ok := ev.Data.(*session.ToolResult); ok {
			fmt.Printf("%s: %s\n", r.CallID, resultText(r))
		}
	}
	// Output:
	// Lyon is 18°C and clear; I cannot look up Atlantis.
	// c1: 18°C and clear in Lyon
	// c2: Blocked: Atlantis is not on the map
}

// Stream shows the turn as it happens: logged events in order, plus
// transient deltas (Seq 0) while the model writes.
func ExampleAgent_Stream() {
	model := llmtest.NewModel(llmtest.Chunks(
		&llm.TextDelta{Text: "Hello, "}, &llm.TextDelta{Text: "world."}, &llm.Finish{Reason: llm.FinishStop}))
	a, _ := agent.New(&agent.Options{Model: model, Provider: "llmtest", ModelName: "scripted"})
	defer a.Close()
	for ev, err := range a.Stream(context.Background(), &agent.RunRequest{Prompt: "Greet me."}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if ev.Seq == 0 {
			fmt.Printf("  delta %q\n", ev.Data.(*session.AssistantChunk).Deltas[0].Text)
			continue
		}
		fmt.Println(ev.Seq, ev.Data.EventType())
	}
	// Output:
	// 1 turn.start
	// 2 user.message
	// 3 step.start
	// 4 request.header
	//   delta "Hello, "
	//   delta "world."
	// 5 assistant.message
	// 6 step.end
	// 7 turn.end
}

// RunTyped asks for an answer of a Go type: the schema is inferred, the
// answer validated (with one corrective retry) and decoded.
func ExampleRunTyped() {
	type Review struct {
		Approve bool   `json:"approve"`
		Summary string `json:"summary"`
	}
	model := llmtest.NewModel(llmtest.Reply(`{"approve": true, "summary": "Small, tested change."}`))
	a, _ := agent.New(&agent.Options{Model: model})
	defer a.Close()
	review, _, err := agent.RunTyped[Review](context.Background(), a, &agent.RunRequest{Prompt: "Review the diff."})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", review)
	// Output: {Approve:true Summary:Small, tested change.}
}

// Compacting a session by hand: the older steps become a summary the
// model writes, the latest step stays verbatim.
func ExampleAgent_Compact() {
	model := llmtest.NewModel(
		llmtest.CallTool("c1", "echo", `{"text":"step one"}`),
		llmtest.Reply("First part done."),
		llmtest.Reply("The user asked for two parts; the first is done."), // the summary
	)
	hooks := new(hook.Set).Observe("compaction", session.TypeCompactionProgress, func(ev session.Event) {
		fmt.Println("compaction:", ev.Data.(*session.CompactionProgress).Phase)
	})
	a, err := agent.New(&agent.Options{Model: model, ModelName: "scripted", Tools: []tool.Tool{echoTool()}, Hooks: hooks})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "Do the first part."}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := a.Compact(context.Background(), &agent.CompactRequest{KeepSteps: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	a.Close() // the observer has seen every event
	fmt.Println("summary:", res.Summary)
	for _, m := range a.Messages() {
		fmt.Printf("%s: %.45s\n", m.Role, strings.ReplaceAll(m.Text(), "\n", " "))
	}
	// Output:
	// compaction: start
	// compaction: progress
	// compaction: end
	// summary: The user asked for two parts; the first is done.
	// user: [The earlier conversation was compacted. Summ
	// assistant: First part done.
}
