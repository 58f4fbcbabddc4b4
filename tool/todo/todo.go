// Package todo is the model's plan as a tool: a short list of steps, each
// pending, in progress or completed, which the model rewrites whole as it
// works and can read back.
//
// Quick start:
//
//	set, err := tool.NewSet(todo.New(nil), …)
//
// The model writes the list with
//
//	{"items": [{"id": "1", "content": "Write the parser", "status": "in_progress"},
//	           {"id": "2", "content": "Test it", "status": "pending"}]}
//
// and reads it with {}. At most one item may be in progress. After a
// write, the result's Meta holds the new list under MetaKey as []Item, so
// the host can record it (rein's loop records a todo.write event).
//
// The list is kept in the call's State (key "items", as JSON), so it is
// durable and per session when the host keeps tool state; without State
// it is kept in memory, per session, for the tool's lifetime.
package todo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/reinhq/rein/tool"
)

// Name is the tool's name.
const Name = "todo"

// MetaKey is the Result.Meta key holding the list ([]Item) after a write.
const MetaKey = "todo.items"

// stateKey is the State key the list is kept under.
const stateKey = "items"

// Item statuses.
const (
	Pending    = "pending"
	InProgress = "in_progress"
	Completed  = "completed"
)

// Item is one step of the plan. Its JSON matches session.TodoItem.
type Item struct {
	ID      string `json:"id,omitempty" jsonschema:"a short stable id; given one if left out"`
	Content string `json:"content" jsonschema:"what the step is, in a few words"`
	Status  string `json:"status" enum:"pending|in_progress|completed"`
}

// Options configures New. A nil *Options is the zero value.
type Options struct {
	// Description replaces the description the model is given.
	Description string
}

const description = `Keeps your plan for the task as a todo list.
Write the whole list to create or update it: {"items":[{"id":"1","content":"…","status":"pending"}, …]}; statuses are pending, in_progress and completed, and at most one item may be in_progress at a time. Mark an item completed as soon as it is done, and the next one in_progress as you start it.
Call with {} to read the current list.`

type args struct {
	Items *[]Item `json:"items,omitempty" jsonschema:"the whole list, replacing the current one; leave out to read the list"`
}

// New returns the todo tool.
func New(opts *Options) tool.Tool {
	if opts == nil {
		opts = &Options{}
	}
	desc := opts.Description
	if desc == "" {
		desc = description
	}
	l := &lists{m: make(map[string][]Item)}
	t, err := tool.New(Name, desc, l.call, &tool.Options{
		// It changes only the model's own plan, never the workspace, so it
		// runs in dry-run mode and under read-only approval rules.
		Annotations: &tool.Annotations{ReadOnly: true, Idempotent: true},
	})
	if err != nil {
		panic("todo: " + err.Error()) // the schema is fixed; this is a bug
	}
	return t
}

// lists keeps lists in memory for calls that carry no State.
type lists struct {
	mu sync.Mutex
	m  map[string][]Item
}

func (l *lists) call(ctx context.Context, in args, call *tool.Call) (*tool.Result, error) {
	if in.Items == nil {
		items, err := l.load(call)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return tool.Text("The todo list is empty."), nil
		}
		return tool.Text("Todo list " + render(items)), nil
	}
	items, verr := check(*in.Items)
	if verr != nil {
		r := tool.Text(verr.Error())
		r.IsError = true
		return r, nil
	}
	if err := l.store(call, items); err != nil {
		return nil, err
	}
	r := tool.Text("Todo list updated " + render(items))
	return r.WithMeta(MetaKey, items), nil
}

func (l *lists) load(call *tool.Call) ([]Item, error) {
	if call.State == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.m[call.Session], nil
	}
	raw, ok := call.State.Get(stateKey)
	if !ok {
		return nil, nil
	}
	var items []Item
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil, fmt.Errorf("the stored todo list is unreadable (%v); write the list again", err)
	}
	return items, nil
}

func (l *lists) store(call *tool.Call, items []Item) error {
	if call.State == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.m[call.Session] = items
		return nil
	}
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	call.State.Set(stateKey, string(b))
	return nil
}

// check validates a list and gives ids to items without one.
func check(in []Item) ([]Item, error) {
	items := make([]Item, len(in))
	copy(items, in)
	taken := make(map[string]int, len(items))
	inProgress := -1
	for i := range items {
		it := &items[i]
		it.Content = strings.TrimSpace(it.Content)
		if it.Content == "" {
			return nil, &tool.ValidationError{Path: fmt.Sprintf("/items/%d/content", i), Problem: "content must not be empty"}
		}
		if it.ID != "" {
			if j, dup := taken[it.ID]; dup {
				return nil, &tool.ValidationError{Path: fmt.Sprintf("/items/%d/id", i), Problem: fmt.Sprintf("id %q is already used by item %d; ids must be unique", it.ID, j)}
			}
			taken[it.ID] = i
		}
		if it.Status == InProgress {
			if inProgress >= 0 {
				return nil, &tool.ValidationError{Path: "/items", Problem: fmt.Sprintf("items %d and %d are both in_progress; at most one item may be in_progress", inProgress, i)}
			}
			inProgress = i
		}
	}
	next := 1
	for i := range items {
		if items[i].ID != "" {
			continue
		}
		for {
			id := strconv.Itoa(next)
			next++
			if _, used := taken[id]; !used {
				items[i].ID = id
				taken[id] = i
				break
			}
		}
	}
	return items, nil
}

// render writes the list for the model.
func render(items []Item) string {
	var done, doing, todo int
	for _, it := range items {
		switch it.Status {
		case Completed:
			done++
		case InProgress:
			doing++
		default:
			todo++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(%d items: %d completed, %d in progress, %d pending):", len(items), done, doing, todo)
	for _, it := range items {
		mark := "[ ]"
		switch it.Status {
		case Completed:
			mark = "[x]"
		case InProgress:
			mark = "[>]"
		}
		fmt.Fprintf(&b, "\n%s %s. %s", mark, it.ID, it.Content)
	}
	return b.String()
}
