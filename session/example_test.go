package session_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// A turn with one tool call, appended to a MemStore and derived into the
// messages of the next model request.
func Example() {
	ctx := context.Background()
	st := session.NewMemStore()
	defer st.Close()
	id, err := st.Create(ctx, &session.CreateRequest{ID: "demo"})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	payloads := []session.Payload{
		&session.TurnStart{Trigger: session.TriggerPrompt},
		&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "What time is it?"}}},
		&session.StepStart{Step: 1},
		&session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "call-1", Name: "clock"}}},
		&session.ToolCall{CallID: "call-1", Name: "clock"},
		&session.ToolResult{CallID: "call-1", Name: "clock", Parts: []llm.Part{&llm.Text{Text: "09:00"}}},
		&session.StepEnd{Step: 1},
		&session.StepStart{Step: 2},
		&session.AssistantMessage{Parts: []llm.Part{&llm.Text{Text: "It is nine o'clock."}}},
		&session.StepEnd{Step: 2},
		&session.TurnEnd{Reason: session.EndCompleted},
	}
	var events []session.Event
	for i, p := range payloads {
		events = append(events, session.Event{Seq: int64(i + 1), Time: now, Session: id, Turn: "t1", Run: "r1", Data: p})
	}
	if err := st.Append(ctx, id, events...); err != nil {
		panic(err)
	}

	var d session.Deriver
	for e, err := range st.Events(ctx, id, 0) {
		if err != nil {
			panic(err)
		}
		d.Add(e)
	}
	for _, m := range d.Messages() {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				fmt.Printf("%s: %s\n", m.Role, p.Text)
			case *llm.ToolCall:
				fmt.Printf("%s: call %s %s\n", m.Role, p.ID, p.Name)
			case *llm.ToolResult:
				fmt.Printf("%s: result of %s\n", m.Role, p.CallID)
			}
		}
	}
	// Output:
	// user: What time is it?
	// assistant: call call-1 clock
	// user: result of call-1
	// assistant: It is nine o'clock.
}

// RepairEvents closes a turn a crash left open.
func ExampleRepairEvents() {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	events := []session.Event{
		{Seq: 1, Turn: "t1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
		{Seq: 2, Turn: "t1", Data: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "deploy"}}}},
		{Seq: 3, Turn: "t1", Data: &session.StepStart{Step: 1}},
		{Seq: 4, Turn: "t1", Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "c1", Name: "shell"}}}},
		{Seq: 5, Turn: "t1", Data: &session.ToolCall{CallID: "c1", Name: "shell"}},
	}
	for _, e := range session.RepairEvents(events, now) {
		line, _ := e.MarshalJSON()
		fmt.Println(string(line))
	}
	// Output:
	// {"seq":6,"time":"2026-01-01T09:00:00Z","session":"","turn":"t1","run":"","type":"tool.result","data":{"call_id":"c1","name":"shell","parts":[{"type":"text","text":"The tool call was interrupted: its outcome is unknown; check before retrying."}],"is_error":true,"code":"TOOL_OUTCOME_UNKNOWN","outcome":"interrupted","interrupted":true}}
	// {"seq":7,"time":"2026-01-01T09:00:00Z","session":"","turn":"t1","run":"","type":"step.end","data":{"step":1,"finish":"aborted"}}
	// {"seq":8,"time":"2026-01-01T09:00:00Z","session":"","turn":"t1","run":"","type":"turn.end","data":{"reason":"interrupted","message":"the turn was cut short before it ended (the process stopped); it was closed on reopening"}}
}

// Export writes a session as NDJSON, one event per line; Import reads it
// back into any store.
func ExampleExport() {
	ctx := context.Background()
	st := session.NewMemStore()
	id, _ := st.Create(ctx, &session.CreateRequest{ID: "notes"})
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	_ = st.Append(ctx, id,
		session.Event{Seq: 1, Time: at, Turn: "t1", Run: "r1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
		session.Event{Seq: 2, Time: at, Turn: "t1", Run: "r1", Data: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "hello"}}}},
		session.Event{Seq: 3, Time: at, Turn: "t1", Run: "r1", Data: &session.TurnEnd{Reason: session.EndCompleted}},
	)
	var buf strings.Builder
	if err := session.Export(ctx, st, id, &buf); err != nil {
		panic(err)
	}
	fmt.Print(buf.String())

	other := session.NewMemStore()
	got, err := session.Import(ctx, other, strings.NewReader(buf.String()))
	fmt.Println(got, err)
	// Output:
	// {"seq":1,"time":"2026-01-01T09:00:00Z","session":"notes","turn":"t1","run":"r1","type":"turn.start","data":{"trigger":"prompt"}}
	// {"seq":2,"time":"2026-01-01T09:00:00Z","session":"notes","turn":"t1","run":"r1","type":"user.message","data":{"parts":[{"type":"text","text":"hello"}]}}
	// {"seq":3,"time":"2026-01-01T09:00:00Z","session":"notes","turn":"t1","run":"r1","type":"turn.end","data":{"reason":"completed"}}
	// notes <nil>
}

// A log written by a server that reused a call id: the view renames the
// second call, pairs the result that follows with it, and reports the
// repair once for the loop to record. A fresh response is renamed the
// same way before it is logged.
func ExampleDeriver_Repairs() {
	var d session.Deriver
	d.Add(
		session.Event{Seq: 1, Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "call_0", Name: "ls"}}}},
		session.Event{Seq: 2, Data: &session.ToolResult{CallID: "call_0", Parts: []llm.Part{&llm.Text{Text: "a.go"}}}},
		session.Event{Seq: 3, Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "call_0", Name: "cat"}}}},
		session.Event{Seq: 4, Data: &session.ToolResult{CallID: "call_0", Parts: []llm.Part{&llm.Text{Text: "package a"}}}},
	)
	for _, m := range d.Messages() {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.ToolCall:
				fmt.Println("call", p.ID, p.Name)
			case *llm.ToolResult:
				fmt.Println("result", p.CallID)
			}
		}
	}
	for _, r := range d.Repairs() {
		fmt.Printf("repair %s %s: %s\n", r.Kind, r.CallID, r.Detail)
	}

	parts, reps := d.DedupeCalls([]llm.Part{&llm.ToolCall{ID: "call_0", Name: "ls"}})
	fmt.Println("fresh call", parts[0].(*llm.ToolCall).ID, len(reps), "repair")
	// Output:
	// call call_0 ls
	// result call_0
	// call call_0_dup1 cat
	// result call_0_dup1
	// repair duplicate-id call_0: the id was used before in this session; the call is renamed to call_0_dup1
	// fresh call call_0_dup2 1 repair
}
