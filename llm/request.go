package llm

import (
	"encoding/json"
)

// Request is one model call, fully assembled. Adapters must not modify it.
// Each adapter's package doc says which fields it ignores.
type Request struct {
	// Model is the provider's model id, e.g. "claude-sonnet-4-5".
	Model string `json:"model"`
	// System is the system prompt as sections, sent in order. A section's
	// Cache hint marks a cache breakpoint after it.
	System []Text `json:"system,omitempty"`
	// Messages is the conversation after the system prompt.
	Messages []Message `json:"messages"`
	// Tools is offered to the model in this order.
	Tools []ToolSpec `json:"tools,omitempty"`
	// ToolChoice constrains tool use; the zero value is auto.
	ToolChoice ToolChoice `json:"tool_choice,omitzero"`
	// ParallelToolCalls, when non-nil, allows or forbids several calls in
	// one response.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`

	// Sampling. Nil or zero means the provider's default.
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	TopK             *int     `json:"top_k,omitempty"`
	MaxTokens        int      `json:"max_tokens,omitempty"`
	Stop             []string `json:"stop,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`

	// Reasoning configures thinking; nil leaves it to the provider.
	Reasoning *ReasoningOptions `json:"reasoning,omitempty"`
	// ResponseFormat asks for text (nil) or JSON matching a schema.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// User is an opaque end-user id passed to providers that take one.
	User string `json:"user,omitempty"`
	// Cache, when non-nil, asks adapters with explicit prompt caching to
	// place breakpoints themselves (tools, system, newest message) with
	// this hint's TTL. Explicit hints on parts are always honoured.
	Cache *CacheHint `json:"cache,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"` // a JSON Schema object
	Cache       *CacheHint      `json:"cache,omitempty"`
}

// ToolChoiceMode is how the model may use tools.
type ToolChoiceMode string

// Tool choice modes.
const (
	ToolChoiceAuto     ToolChoiceMode = ""         // the model decides
	ToolChoiceRequired ToolChoiceMode = "required" // at least one call
	ToolChoiceNone     ToolChoiceMode = "none"     // no calls
	ToolChoiceTool     ToolChoiceMode = "tool"     // call the tool named in Name
)

// ToolChoice constrains tool use.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// Effort levels for ReasoningOptions.Effort.
const (
	EffortMinimal = "minimal"
	EffortLow     = "low"
	EffortMedium  = "medium"
	EffortHigh    = "high"
)

// ReasoningOptions configures a model's thinking: an effort level (OpenAI),
// a token budget (Anthropic), or both; each adapter maps what it supports.
type ReasoningOptions struct {
	Effort       string `json:"effort,omitempty"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	// Summary asks for reasoning summaries: "auto", "concise" or "detailed".
	Summary string `json:"summary,omitempty"`
}

// ResponseFormat asks for structured output.
type ResponseFormat struct {
	// Name labels the schema for providers that need one.
	Name string `json:"name,omitempty"`
	// Schema is a JSON Schema; the answer must be JSON matching it.
	Schema json.RawMessage `json:"schema"`
	// Strict asks the provider to enforce the schema where it can.
	Strict bool `json:"strict,omitempty"`
}
