package anthropic

import (
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func TestConformance(t *testing.T) {
	llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model {
		srv := llmtest.NewServer(t, m)
		model, err := New(&Options{APIKey: "test", BaseURL: srv.URL, Model: "claude-sonnet-4-5"})
		if err != nil {
			t.Fatal(err)
		}
		return model
	})
}
