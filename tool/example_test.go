package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/tool"
)

// greetArgs is the input of the greet tool. The tags make its schema.
type greetArgs struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times,omitempty" jsonschema:"how many times" default:"1"`
	Tone  string `json:"tone,omitempty" enum:"warm|formal" default:"warm"`
}

func Example() {
	greet, err := tool.New("greet", "Greets someone.",
		func(ctx context.Context, in greetArgs, call *tool.Call) (*tool.Result, error) {
			word := "Hello"
			if in.Tone == "formal" {
				word = "Good day"
			}
			return tool.Text(strings.Repeat(word+", "+in.Name+"! ", in.Times)), nil
		}, &tool.Options{Annotations: &tool.Annotations{ReadOnly: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(greet.Spec().Schema))

	// The model sent the count as a string: it is coerced, and said so.
	v, _ := tool.NewValidator(greet.Spec().Schema)
	args, coerced, err := v.Validate(json.RawMessage(`{"name":"Ada","times":"2"}`))
	fmt.Println(string(args), coerced, err)

	res, err := tool.Run(context.Background(), greet, &tool.Call{Name: "greet", Args: args})
	fmt.Printf("%q %v\n", res.TextOf(), err)

	// A mistake the model can correct.
	res, _ = tool.Run(context.Background(), greet, &tool.Call{Name: "greet", Args: json.RawMessage(`{"tone":"warm"}`)})
	fmt.Println(res.TextOf())
	// Output:
	// {"type":"object","properties":{"name":{"type":"string","description":"who to greet"},"times":{"type":"integer","description":"how many times","default":1},"tone":{"type":"string","default":"warm","enum":["warm","formal"]}},"required":["name"],"additionalProperties":false}
	// {"name":"Ada","times":2} [/times] <nil>
	// "Hello, Ada! Hello, Ada! " <nil>
	// Validation error: missing required property "name", at /
}

func ExampleSpill() {
	res := tool.Text(strings.Repeat("0123456789\n", 100))
	out, _ := tool.Spill(res, 120, "/tmp/rein-example-spill")
	text := out.TextOf()
	fmt.Println(strings.Count(text, "0123456789"), strings.Contains(text, "bytes elided; full output in /tmp/rein-example-spill/"))
	// Output: 3 true
}

func ExamplePolicy() {
	p := tool.NewPolicy(&tool.PolicyOptions{
		AllowReadOnly: true,
		Approver: tool.ApproverFunc(func(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
			return tool.Approval{Verdict: tool.Allow, Reason: "the user agreed", Always: true, Scope: "go test"}, nil
		}),
	})
	ctx := context.Background()
	for _, cmd := range []string{"go test ./...", "go test ./tool", "go test ./... | tee log"} {
		d, _ := p.Decide(ctx, &tool.ApprovalRequest{Session: "s1", Tool: "shell", Command: cmd})
		fmt.Printf("%s: %s (%s)\n", cmd, d.Verdict, d.Reason)
	}
	// Output:
	// go test ./...: allow (the user agreed)
	// go test ./tool: allow (remembered for this session: allow rule for shell commands starting "go test")
	// go test ./... | tee log: allow (the user agreed)
}
