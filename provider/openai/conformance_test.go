package openai

import (
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func TestConformanceChat(t *testing.T) {
	llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model {
		srv := llmtest.NewServer(t, m)
		c, err := NewChat(&Options{APIKey: "test", BaseURL: srv.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}
