package cachewatch_test

import (
	"fmt"

	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
)

// A loop calls Before as it sends each request and After with the usage of
// its response. Here the host edits its system prompt between two steps.
func Example() {
	w := cachewatch.New(&cachewatch.Options{SectionNames: []string{"base", "today"}})

	req := &llm.Request{
		Model:    "claude-sonnet-4-5",
		System:   []llm.Text{{Text: "You are terse."}, {Text: "Today is Monday."}},
		Messages: []llm.Message{llm.UserText("What changed?")},
	}
	w.Before(req)
	w.After(llm.Usage{Input: 5, CacheWrite: 2000})

	// The next step appends the answer and re-renders the date.
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "Nothing."}}})
	req.System = []llm.Text{req.System[0], {Text: "Today is Tuesday."}}
	if d := w.Before(req); d != nil {
		fmt.Println(d)
	}
	if b := w.After(llm.Usage{Input: 5, CacheRead: 400, CacheWrite: 1610}); b != nil {
		fmt.Println(b)
	}
	// Output:
	// cache drift at step 2: system (section 1 today changed (16 → 17 bytes))
	// cache break at step 2: read 400 tokens, expected at least 1600; 1600 tokens billed again; cause change: system (section 1 today changed (16 → 17 bytes))
}

// Impact tells a host what a change would cost before it makes it.
func ExampleWatcher_Impact() {
	w := cachewatch.New(nil)
	req := &llm.Request{
		Model:    "claude-sonnet-4-5",
		System:   []llm.Text{{Text: "You are terse."}},
		Messages: []llm.Message{llm.UserText("Hello"), llm.UserText("Again")},
	}
	w.Before(req)
	w.After(llm.Usage{CacheWrite: 1000})

	fmt.Println(w.Impact(cachewatch.Change{Dimension: cachewatch.DimTools}).Tokens)
	fmt.Println(w.Impact(cachewatch.Change{Dimension: cachewatch.DimMessagePrefix, Index: 1}).Tokens < 1000)
	// Output:
	// 1000
	// true
}
