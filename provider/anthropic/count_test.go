package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

func TestCountTokens(t *testing.T) {
	m, rec := replay(t, exchange{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"input_tokens":1234}`)})
	req := &llm.Request{
		Model:     "claude-sonnet-4-5",
		System:    []llm.Text{{Text: "Be brief."}},
		Tools:     tools("weather"),
		Messages:  []llm.Message{llm.UserText("hi")},
		MaxTokens: 4096,
		Reasoning: &llm.ReasoningOptions{BudgetTokens: 2048},
	}
	var _ llm.TokenCounter = m
	n, err := m.CountTokens(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1234 {
		t.Errorf("CountTokens = %d, want 1234", n)
	}
	var sent map[string]any
	if err := json.Unmarshal(rec.body(0), &sent); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range []string{"model", "messages", "system", "tools", "thinking", "max_tokens", "stream"} {
		if _, ok := sent[k]; ok {
			keys = append(keys, k)
		}
	}
	// count_tokens takes the prompt, not the sampling settings.
	if diff := cmp.Diff([]string{"model", "messages", "system", "tools", "thinking"}, keys); diff != "" {
		t.Errorf("count_tokens body fields (-want +got):\n%s", diff)
	}
}

func TestCountTokensError(t *testing.T) {
	m, _ := replay(t, httpError(529, "overloaded_error", "Overloaded"))
	_, err := m.CountTokens(context.Background(), simpleRequest())
	if k := llm.KindOf(err); k != llm.ErrOverloaded {
		t.Fatalf("kind %q (%v), want overloaded", k, err)
	}
}
