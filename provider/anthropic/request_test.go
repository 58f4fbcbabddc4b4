package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

const okStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":1,"output_tokens":1}}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}

event: message_stop
data: {"type":"message_stop"}

`

// sentBody streams req through a Model and returns the HTTP body it sent.
func sentBody(t *testing.T, req *llm.Request) []byte {
	t.Helper()
	m, rec := replay(t, sse(okStream))
	if _, err := collect(m.Stream(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	// Re-encode with sorted keys: the SDK writes extra fields in map order.
	dec := json.NewDecoder(bytes.NewReader(rec.body(0)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("sent body is not JSON: %v\n%s", err, rec.body(0))
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func ptr[T any](v T) *T { return &v }

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"the city"}},"required":["location"]}`)

func tools(names ...string) []llm.ToolSpec {
	var out []llm.ToolSpec
	for _, n := range names {
		out = append(out, llm.ToolSpec{Name: n, Description: "Look up " + n, Schema: weatherSchema})
	}
	return out
}

func userText(s string, h *llm.CacheHint) llm.Message {
	return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: s, Cache: h}}}
}

func call(id, name, args string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.ToolCall{ID: llm.CallID(id), Name: name, Args: json.RawMessage(args)}}}
}

func toolResult(id, text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: llm.CallID(id), Parts: []llm.Part{&llm.Text{Text: text}}}}}
}

// toolLoop is a conversation three tool calls deep.
func toolLoop() []llm.Message {
	return []llm.Message{
		llm.UserText("What's the weather in Paris, Rome and Oslo?"),
		call("toolu_1", "weather", `{"location":"Paris"}`),
		toolResult("toolu_1", "22 C"),
		call("toolu_2", "weather", `{"location":"Rome"}`),
		toolResult("toolu_2", "27 C"),
		call("toolu_3", "weather", `{"location":"Oslo"}`),
		toolResult("toolu_3", "9 C"),
	}
}

// png is a 1x1 PNG.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func TestBuildRequestGolden(t *testing.T) {
	hour := &llm.CacheHint{TTL: time.Hour}
	five := &llm.CacheHint{}
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{
			name: "system_tools_sampling",
			req: &llm.Request{
				Model:             "claude-sonnet-4-5",
				System:            []llm.Text{{Text: "You are terse."}, {Text: "Answer in English."}},
				Messages:          []llm.Message{llm.UserText("Weather in Paris?")},
				Tools:             tools("weather", "forecast"),
				ToolChoice:        llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "weather"},
				ParallelToolCalls: ptr(false),
				Temperature:       ptr(0.2),
				TopP:              ptr(0.9),
				TopK:              ptr(40),
				MaxTokens:         1024,
				Stop:              []string{"\n\nHuman:"},
				Seed:              ptr(int64(7)),
				PresencePenalty:   ptr(0.5),
				User:              "user-42",
			},
		},
		{
			name: "tool_choice_required",
			req: &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("go")},
				Tools: tools("weather"), ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}},
		},
		{
			name: "tool_choice_none",
			req: &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("go")},
				Tools: tools("weather"), ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
		},
		{
			name: "tool_choice_auto_serial",
			req: &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("go")},
				Tools: tools("weather"), ParallelToolCalls: ptr(false)},
		},
		{
			name: "thinking_round_trip",
			req: &llm.Request{
				Model:     "claude-sonnet-4-5",
				Reasoning: &llm.ReasoningOptions{BudgetTokens: 4000},
				Tools:     tools("weather"),
				Messages: []llm.Message{
					llm.UserText("Weather in Paris?"),
					{Role: llm.RoleAssistant, Provenance: &llm.Provenance{Provider: "anthropic", Model: "claude-sonnet-4-5"}, Parts: []llm.Part{
						&llm.Reasoning{Text: "The user wants weather.", Signature: "sig-abc"},
						&llm.Reasoning{Redacted: "opaque-redacted-data"},
						&llm.Reasoning{Text: "cut off before its signature"},
						&llm.ToolCall{ID: "toolu_1", Name: "weather"},
					}},
					toolResult("toolu_1", "22 C"),
					{Role: llm.RoleAssistant, Provenance: &llm.Provenance{Provider: "openai", Model: "o3"}, Parts: []llm.Part{
						&llm.Reasoning{Text: "someone else's thoughts", Signature: "foreign"},
						&llm.Text{Text: "It is 22 C."},
					}},
					llm.UserText("Thanks. And tomorrow?"),
				},
			},
		},
		{
			name: "thinking_effort",
			req: &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("think")},
				Reasoning: &llm.ReasoningOptions{Effort: llm.EffortHigh}},
		},
		{
			name: "cache_auto_tool_loop",
			req: &llm.Request{
				Model:    "claude-sonnet-4-5",
				System:   []llm.Text{{Text: "You are a weather bot."}, {Text: "Be brief."}},
				Tools:    tools("weather", "forecast"),
				Messages: toolLoop(),
				Cache:    &llm.CacheHint{},
			},
		},
		{
			name: "cache_auto_1h",
			req: &llm.Request{
				Model:    "claude-sonnet-4-5",
				System:   []llm.Text{{Text: "You are a weather bot."}},
				Tools:    tools("weather"),
				Messages: toolLoop()[:3],
				Cache:    hour,
			},
		},
		{
			// Explicit hints on every old message plus automatic ones:
			// only four survive, the oldest messages' dropped first.
			name: "cache_limit_four",
			req: &llm.Request{
				Model:  "claude-sonnet-4-5",
				System: []llm.Text{{Text: "You are a weather bot.", Cache: five}},
				Tools:  tools("weather"),
				Messages: []llm.Message{
					userText("one", five), call("toolu_1", "weather", `{"location":"A"}`),
					userText("two", five), call("toolu_2", "weather", `{"location":"B"}`),
					userText("three", five), call("toolu_3", "weather", `{"location":"C"}`),
					userText("four", five),
				},
				Cache: five,
			},
		},
		{
			// A 1-hour breakpoint after 5-minute ones raises those to 1 hour.
			name: "cache_ttl_order",
			req: &llm.Request{
				Model:    "claude-sonnet-4-5",
				System:   []llm.Text{{Text: "Long stable instructions.", Cache: hour}},
				Tools:    []llm.ToolSpec{{Name: "weather", Schema: weatherSchema, Cache: five}},
				Messages: []llm.Message{userText("hello", five)},
			},
		},
		{
			name: "content_kinds",
			req: &llm.Request{
				Model: "claude-sonnet-4-5",
				Messages: []llm.Message{
					{Role: llm.RoleUser, Parts: []llm.Part{
						&llm.Text{Text: "Compare these."},
						&llm.Image{Data: png},
						&llm.Image{URL: "https://example.com/cat.jpg"},
						&llm.Document{MediaType: "application/pdf", Data: []byte("%PDF-1.4 tiny"), Title: "Report"},
						&llm.Document{URL: "https://example.com/paper.pdf"},
						&llm.Document{MediaType: "text/plain", Data: []byte("plain notes")},
					}},
					{Role: llm.RoleAssistant, Parts: []llm.Part{
						&llm.Text{Text: "Let me look."},
						&llm.ToolCall{ID: "toolu_1", Name: "view", Args: json.RawMessage(`{"page":1}`)},
						&llm.ToolCall{ID: "toolu_2", Name: "view", Args: json.RawMessage(`{"page": broken`)},
					}},
					// Two user messages in a row merge, tool results first.
					llm.UserText("Also: hurry."),
					{Role: llm.RoleUser, Parts: []llm.Part{
						&llm.ToolResult{CallID: "toolu_1", Parts: []llm.Part{&llm.Text{Text: "page one"}, &llm.Image{MediaType: "image/png", Data: png}}},
						&llm.ToolResult{CallID: "toolu_2", IsError: true, Parts: []llm.Part{&llm.Text{Text: "invalid arguments"}}},
					}},
				},
			},
		},
		{
			name: "system_messages_and_format",
			req: &llm.Request{
				Model:  "claude-sonnet-4-5",
				System: []llm.Text{{Text: "Base prompt."}},
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Parts: []llm.Part{&llm.Text{Text: "Extra system context."}}},
					llm.UserText("List two colours."),
				},
				ResponseFormat: &llm.ResponseFormat{Name: "colours", Schema: json.RawMessage(`{"type":"object","properties":{"colours":{"type":"array","items":{"type":"string"}}},"required":["colours"],"additionalProperties":false}`)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := json.Marshal(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got := sentBody(t, tt.req)
			checkGolden(t, "request_"+tt.name+".json", got)
			after, _ := json.Marshal(tt.req)
			if !bytes.Equal(before, after) {
				t.Error("Stream modified the request")
			}
			checkBreakpoints(t, got)
		})
	}
}

// checkBreakpoints asserts the API's cache rules on a sent body: at most
// four breakpoints, and no 1-hour one after a 5-minute one.
func checkBreakpoints(t *testing.T, body []byte) {
	t.Helper()
	var ttls []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			// Visit nested content before the block's own marker, in the
			// order the API reads the prompt.
			for _, k := range []string{"tools", "system", "messages", "content"} {
				if c, ok := x[k]; ok {
					walk(c)
				}
			}
			if cc, ok := x["cache_control"].(map[string]any); ok {
				ttl, _ := cc["ttl"].(string)
				if ttl == "" {
					ttl = "5m"
				}
				ttls = append(ttls, ttl)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	walk(v)
	if len(ttls) > MaxCacheBreakpoints {
		t.Errorf("%d cache breakpoints, the API allows %d", len(ttls), MaxCacheBreakpoints)
	}
	if i := strings.Index(strings.Join(ttls, " "), "5m 1h"); i >= 0 {
		t.Errorf("a 1h breakpoint follows a 5m one: %v", ttls)
	}
}

func TestBuildParamsErrors(t *testing.T) {
	tests := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"no model", &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, "no model"},
		{"no messages", &llm.Request{Model: "m"}, "no messages"},
		{"only empty text", &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("")}}, "no messages"},
		{"named tool without tools", &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "x"}}, "needs tools"},
		{"budget above explicit max", &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")},
			MaxTokens: 2000, Reasoning: &llm.ReasoningOptions{BudgetTokens: 4000}}, "raise MaxTokens"},
		{"unknown effort", &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")},
			Reasoning: &llm.ReasoningOptions{Effort: "extreme"}}, "unknown reasoning effort"},
		{"schema not an object", &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")},
			Tools: []llm.ToolSpec{{Name: "t", Schema: json.RawMessage(`[1]`)}}}, "not a JSON object"},
		{"tool call in user message", &llm.Request{Model: "m", Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolCall{ID: "c", Name: "t"}}}}}, "belong to assistant"},
		{"bad role", &llm.Request{Model: "m", Messages: []llm.Message{{Role: "tool", Parts: []llm.Part{&llm.Text{Text: "x"}}}}}, "role"},
		{"unsupported image", &llm.Request{Model: "m", Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{&llm.Image{MediaType: "image/tiff", Data: []byte("II*")}}}}}, "image/tiff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildParams(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("BuildParams error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// Without an explicit MaxTokens, a thinking budget above the default
// raises max_tokens instead of failing.
func TestThinkingRaisesDefaultMaxTokens(t *testing.T) {
	p, err := BuildParams(&llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")},
		Reasoning: &llm.ReasoningOptions{BudgetTokens: 10000}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{10000, 10000 + DefaultMaxTokens}, []int64{p.Thinking.OfEnabled.BudgetTokens, p.MaxTokens}); diff != "" {
		t.Errorf("budget, max_tokens (-want +got):\n%s", diff)
	}
}
