package agent_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/todo"
)

func TestTodoWriteIsRecorded(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{todo.New(nil)}},
		llmtest.CallTool("c1", todo.Name, `{"items":[{"content":"parse","status":"in_progress"},{"content":"test","status":"pending"}]}`),
		llmtest.CallTool("c2", todo.Name, `{}`),
		llmtest.CallTool("c3", todo.Name, `{"items":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`),
		llmtest.Reply("ok"))
	h.run("plan it")
	var plans []*session.TodoWrite
	var after []string // the event before each plan
	evs := h.events()
	for i, ev := range evs {
		if p, ok := ev.Data.(*session.TodoWrite); ok {
			plans = append(plans, p)
			after = append(after, evs[i-1].Data.EventType())
		}
	}
	// Only the write that succeeded is a plan: reading records nothing,
	// and a refused write leaves the plan as it was.
	want := []*session.TodoWrite{{Items: []session.TodoItem{
		{ID: "1", Content: "parse", Status: todo.InProgress},
		{ID: "2", Content: "test", Status: todo.Pending},
	}}}
	if diff := cmp.Diff(want, plans); diff != "" {
		t.Fatalf("todo.write events (-want +got):\n%s", diff)
	}
	if after[0] != session.TypeToolResult {
		t.Errorf("the plan follows %s, want the write's tool.result", after[0])
	}
}
