package todo_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/todo"
)

func Example() {
	plan := todo.New(nil)
	res, _ := tool.Run(context.Background(), plan, &tool.Call{Session: "s1", Args: json.RawMessage(
		`{"items":[{"content":"Read the code","status":"completed"},{"content":"Fix the bug","status":"in_progress"}]}`)})
	fmt.Println(res.TextOf())
	fmt.Println(len(res.Meta[todo.MetaKey].([]todo.Item)), "items for the log")
	// Output:
	// Todo list updated (2 items: 1 completed, 1 in progress, 0 pending):
	// [x] 1. Read the code
	// [>] 2. Fix the bug
	// 2 items for the log
}
