package todo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/todo"
)

func call(t *testing.T, tl tool.Tool, c *tool.Call, args string) *tool.Result {
	t.Helper()
	c.Args = json.RawMessage(args)
	res, err := tool.Run(context.Background(), tl, c)
	if err != nil {
		t.Fatalf("Run(%s): %v", args, err)
	}
	return res
}

func TestTodoWriteAndRead(t *testing.T) {
	tl := todo.New(nil)
	c := &tool.Call{Name: todo.Name, Session: "s1"}
	if res := call(t, tl, c, `{}`); res.TextOf() != "The todo list is empty." || res.Meta[todo.MetaKey] != nil {
		t.Errorf("empty read = %q, meta %v", res.TextOf(), res.Meta)
	}
	res := call(t, tl, c, `{"items":[{"content":"Write the parser","status":"completed"},{"id":"b","content":"Test it","status":"in_progress"},{"content":"Ship","status":"pending"}]}`)
	if res.IsError {
		t.Fatalf("write failed: %s", res.TextOf())
	}
	want := []todo.Item{{ID: "1", Content: "Write the parser", Status: "completed"}, {ID: "b", Content: "Test it", Status: "in_progress"}, {ID: "2", Content: "Ship", Status: "pending"}}
	if diff := cmp.Diff(want, res.Meta[todo.MetaKey]); diff != "" {
		t.Errorf("Meta items (-want +got):\n%s", diff)
	}
	const rendered = "(3 items: 1 completed, 1 in progress, 1 pending):\n[x] 1. Write the parser\n[>] b. Test it\n[ ] 2. Ship"
	if got := res.TextOf(); got != "Todo list updated "+rendered {
		t.Errorf("write result = %q", got)
	}
	read := call(t, tl, c, ``)
	if got := read.TextOf(); got != "Todo list "+rendered || read.Meta[todo.MetaKey] != nil {
		t.Errorf("read = %q, meta %v", got, read.Meta)
	}
	if res := call(t, tl, &tool.Call{Session: "s2"}, `{}`); res.TextOf() != "The todo list is empty." {
		t.Errorf("another session sees the list: %q", res.TextOf())
	}
	// Clearing.
	call(t, tl, c, `{"items":[]}`)
	if res := call(t, tl, c, `{"items":null}`); res.TextOf() != "The todo list is empty." {
		t.Errorf("after clearing: %q", res.TextOf())
	}
}

func TestTodoRejections(t *testing.T) {
	tl := todo.New(nil)
	tests := []struct{ name, args, want string }{
		{"two in progress", `{"items":[{"content":"a","status":"in_progress"},{"content":"b","status":"pending"},{"content":"c","status":"in_progress"}]}`,
			"Validation error: items 0 and 2 are both in_progress; at most one item may be in_progress, at /items"},
		{"bad status", `{"items":[{"content":"a","status":"done"}]}`,
			`Validation error: "done" is not one of the allowed values "pending", "in_progress", "completed", at /items/0/status`},
		{"duplicate id", `{"items":[{"id":"x","content":"a","status":"pending"},{"id":"x","content":"b","status":"pending"}]}`,
			`Validation error: id "x" is already used by item 0; ids must be unique, at /items/1/id`},
		{"empty content", `{"items":[{"content":"  ","status":"pending"}]}`,
			"Validation error: content must not be empty, at /items/0/content"},
		{"missing status", `{"items":[{"content":"a"}]}`,
			`Validation error: missing required property "status", at /items/0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, tl, &tool.Call{Session: "s"}, tt.args)
			if !res.IsError || res.TextOf() != tt.want {
				t.Errorf("got %q (error %v), want %q", res.TextOf(), res.IsError, tt.want)
			}
			if res := call(t, tl, &tool.Call{Session: "s"}, `{}`); res.TextOf() != "The todo list is empty." {
				t.Errorf("a rejected write changed the list: %q", res.TextOf())
			}
		})
	}
}

func TestTodoKeepsItsListInState(t *testing.T) {
	ctx := context.Background()
	store := tool.NewMemStateStore()
	write := func(tl tool.Tool, args string) *tool.Result {
		st, err := tool.LoadState(ctx, store, "s1", todo.Name)
		if err != nil {
			t.Fatal(err)
		}
		return call(t, tl, &tool.Call{Session: "s1", State: st}, args)
	}
	write(todo.New(nil), `{"items":[{"id":"a","content":"Plan","status":"in_progress"}]}`)
	// A new tool (as after a restart) reads the list back from the store.
	if got := write(todo.New(nil), `{}`).TextOf(); got != "Todo list (1 items: 0 completed, 1 in progress, 0 pending):\n[>] a. Plan" {
		t.Errorf("read after restart = %q", got)
	}
	saved, _ := store.Load(ctx, "s1", todo.Name)
	if saved["items"] != `[{"id":"a","content":"Plan","status":"in_progress"}]` {
		t.Errorf("stored state = %v", saved)
	}
}

func TestTodoSpec(t *testing.T) {
	sp := todo.New(nil).Spec()
	if sp.Name != "todo" || sp.Annotations == nil || !sp.Annotations.ReadOnly {
		t.Errorf("spec = %+v", sp)
	}
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(sp.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Properties["items"].Type != "array" || len(schema.Required) != 0 {
		t.Errorf("schema = %s", sp.Schema)
	}
	if d := todo.New(&todo.Options{Description: "plan"}).Spec().Description; d != "plan" {
		t.Errorf("description option ignored: %q", d)
	}
}
