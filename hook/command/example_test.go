package command_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/hook/command"
)

// A SessionStart hook's plain output becomes context for the model.
func Example() {
	settings := []byte(`{"hooks": {"SessionStart": [{"hooks": [
		{"type": "command", "command": "echo \"branch: main\""}
	]}]}}`)
	entries, err := command.Parse(settings, ".rein/settings.json", false)
	if err != nil {
		panic(err)
	}
	r, err := command.New(entries, nil)
	if err != nil {
		panic(err)
	}
	res, err := r.Fire(context.Background(), &command.FireRequest{Event: command.SessionStart, Session: "s1", Source: "startup"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Context)
	fmt.Println(r.Notices()) // what agent.Options.Notices hands the next request
	// Output:
	// [branch: main]
	// [branch: main]
}
