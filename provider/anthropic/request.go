package anthropic

import (
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/llm"
)

// MaxCacheBreakpoints is how many cache_control markers one Messages API
// request may carry.
const MaxCacheBreakpoints = 4

// MinThinkingBudget is the smallest thinking budget the API accepts;
// smaller budgets are raised to it.
const MinThinkingBudget = 1024

// effortBudgets maps ReasoningOptions.Effort to a thinking budget when no
// BudgetTokens is given.
var effortBudgets = map[string]int{
	llm.EffortMinimal: 1024,
	llm.EffortLow:     2048,
	llm.EffortMedium:  8192,
	llm.EffortHigh:    16384,
}

type buildConfig struct {
	provider  string
	model     string
	maxTokens int
}

// BuildParams returns the Messages API request body for req, with the
// package defaults (provider "anthropic", DefaultMaxTokens), decoded into
// the SDK's types; Model.Params applies a Model's own options. It does not
// modify req. The body is what Stream sends, less "stream": true.
func BuildParams(req *llm.Request) (sdk.MessageNewParams, error) {
	return buildParams(req, buildConfig{provider: "anthropic", maxTokens: DefaultMaxTokens})
}

func buildParams(req *llm.Request, cfg buildConfig) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	body, err := build(new(bodyCache), req, cfg, false)
	if err != nil {
		return p, err
	}
	if err := p.UnmarshalJSON(withoutStream(body.Bytes())); err != nil {
		return p, fmt.Errorf("anthropic: decode request body: %w", err)
	}
	// The sampling knobs the SDK has no fields for ride as extra fields,
	// which decoding does not keep.
	extra := map[string]any{}
	if req.Temperature != nil {
		extra["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		extra["top_p"] = *req.TopP
	}
	if req.TopK != nil {
		extra["top_k"] = *req.TopK
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p, nil
}

// withoutStream drops the trailing "stream": true that build writes.
func withoutStream(body []byte) []byte {
	const tail = `,"stream":true}`
	if n := len(body) - len(tail); n > 0 && string(body[n:]) == tail {
		return append(body[:n:n], '}')
	}
	return body
}
