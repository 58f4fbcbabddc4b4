package anthropic

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

// BuildParams returns, in the SDK's types, the very body Stream sends.
func TestBuildParamsDecodesTheSentBody(t *testing.T) {
	reqs := []*llm.Request{
		{Model: "claude-sonnet-4-5", System: []llm.Text{{Text: "Be brief.", Cache: &llm.CacheHint{TTL: time.Hour}}}, Tools: tools("weather", "forecast"),
			Messages: toolLoop(), Cache: &llm.CacheHint{}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "weather"},
			ParallelToolCalls: ptr(false), Temperature: ptr(0.5), TopK: ptr(3), Stop: []string{"END"}, User: "u-1",
			Reasoning: &llm.ReasoningOptions{BudgetTokens: 2048}},
		{Model: "claude-sonnet-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			&llm.Text{Text: "Look <here> & there."}, &llm.Image{Data: png}, &llm.Document{URL: "https://example.com/a.pdf"},
			&llm.Document{MediaType: "text/plain", Data: []byte("notes"), Title: "Notes"},
		}}}, ResponseFormat: &llm.ResponseFormat{Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}},
	}
	for i, req := range reqs {
		p, err := BuildParams(req)
		if err != nil {
			t.Fatal(err)
		}
		fromSDK, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		body, err := build(new(bodyCache), req, buildConfig{provider: "anthropic", maxTokens: DefaultMaxTokens}, false)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(withoutStream(body.Bytes()), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(fromSDK, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d: BuildParams re-encoded differs from the body (-body +params):\n%s", i, diff)
		}
	}
}
