package llm_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
)

func TestPartJSONRoundTrip(t *testing.T) {
	hint := &llm.CacheHint{TTL: time.Hour}
	tests := []struct {
		name string
		part llm.Part
		json string
	}{
		{"text", &llm.Text{Text: "hi"}, `{"type":"text","text":"hi"}`},
		{"empty text", &llm.Text{}, `{"type":"text","text":""}`},
		{"text with cache", &llm.Text{Text: "hi", Cache: hint}, `{"type":"text","text":"hi","cache":{"ttl":3600000000000}}`},
		{"reasoning", &llm.Reasoning{Text: "think", Signature: "sig"}, `{"type":"reasoning","text":"think","signature":"sig"}`},
		{"redacted reasoning", &llm.Reasoning{Redacted: "opaque"}, `{"type":"reasoning","redacted":"opaque"}`},
		{"tool call", &llm.ToolCall{ID: "c1", Name: "echo", Args: json.RawMessage(`{"x":1}`)}, `{"type":"tool_call","id":"c1","name":"echo","args":{"x":1}}`},
		{"tool call no args", &llm.ToolCall{ID: "c1", Name: "echo"}, `{"type":"tool_call","id":"c1","name":"echo"}`},
		{"tool call malformed args", &llm.ToolCall{ID: "c1", Name: "echo", Args: json.RawMessage(`{"x":`)}, `{"type":"tool_call","id":"c1","name":"echo","args_text":"{\"x\":"}`},
		{"tool result", &llm.ToolResult{CallID: "c1", IsError: true, Parts: []llm.Part{&llm.Text{Text: "boom"}, &llm.Image{MediaType: "image/png", Data: []byte{1, 2}}}},
			`{"type":"tool_result","call_id":"c1","is_error":true,"parts":[{"type":"text","text":"boom"},{"type":"image","media_type":"image/png","data":"AQI="}]}`},
		{"tool result nested", &llm.ToolResult{CallID: "c2", Parts: []llm.Part{&llm.ToolResult{CallID: "inner", Parts: []llm.Part{&llm.Text{Text: "x"}}}}},
			`{"type":"tool_result","call_id":"c2","parts":[{"type":"tool_result","call_id":"inner","parts":[{"type":"text","text":"x"}]}]}`},
		{"image url", &llm.Image{URL: "https://example.com/a.png", Cache: hint}, `{"type":"image","url":"https://example.com/a.png","cache":{"ttl":3600000000000}}`},
		{"document", &llm.Document{MediaType: "application/pdf", Data: []byte("%PDF"), Title: "spec"}, `{"type":"document","media_type":"application/pdf","data":"JVBERg==","title":"spec"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := llm.MarshalPart(tt.part)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.json, string(b)); diff != "" {
				t.Errorf("json (-want +got):\n%s", diff)
			}
			got, err := llm.UnmarshalPart(b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.part, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessageJSONRoundTrip(t *testing.T) {
	m := llm.Message{
		Role: llm.RoleAssistant,
		Parts: []llm.Part{
			&llm.Reasoning{Text: "hm", Signature: "s"},
			&llm.Text{Text: "Let me look."},
			&llm.ToolCall{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)},
			&llm.ToolCall{ID: "c2", Name: "read", Args: json.RawMessage(`not json`)},
		},
		Provenance: &llm.Provenance{Provider: "anthropic", Model: "claude-sonnet-4-5", State: json.RawMessage(`{"k":"v"}`)},
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got llm.Message
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestUnmarshalPartErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"not json", `{`, "llm: unmarshal part"},
		{"unknown type", `{"type":"video"}`, `unknown type "video"`},
		{"no type", `{"text":"x"}`, `unknown type ""`},
		{"bad field", `{"type":"text","text":5}`, "unmarshal text part"},
		{"bad nested", `{"type":"tool_result","call_id":"c","parts":[{"type":"nope"}]}`, `unknown type "nope"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.UnmarshalPart([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := llm.MarshalPart(nil); err == nil {
		t.Error("MarshalPart(nil) succeeded")
	}
}

func TestMessageHelpers(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
		&llm.Text{Text: "a"}, &llm.ToolCall{ID: "1", Name: "x"}, &llm.Text{Text: "b"}, &llm.ToolCall{ID: "2", Name: "y"},
	}}
	if got := m.Text(); got != "ab" {
		t.Errorf("Text() = %q, want %q", got, "ab")
	}
	var ids []llm.CallID
	for _, c := range m.ToolCalls() {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]llm.CallID{"1", "2"}, ids); diff != "" {
		t.Errorf("ToolCalls (-want +got):\n%s", diff)
	}
}

func TestRequestClone(t *testing.T) {
	temp, parallel := 0.5, true
	r := &llm.Request{
		Model:             "m",
		System:            []llm.Text{{Text: "sys", Cache: &llm.CacheHint{}}},
		Messages:          []llm.Message{llm.UserText("hi"), {Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: "c", Parts: []llm.Part{&llm.Text{Text: "r"}}}}}},
		Tools:             []llm.ToolSpec{{Name: "t", Schema: json.RawMessage(`{"type":"object"}`)}},
		Temperature:       &temp,
		ParallelToolCalls: &parallel,
		Stop:              []string{"END"},
		Reasoning:         &llm.ReasoningOptions{Effort: llm.EffortHigh},
		ResponseFormat:    &llm.ResponseFormat{Schema: json.RawMessage(`{}`)},
	}
	c := r.Clone()
	if diff := cmp.Diff(r, c); diff != "" {
		t.Fatalf("clone differs (-orig +clone):\n%s", diff)
	}
	// Change every reachable thing in the clone; the original must not move.
	before := r.Clone()
	c.System[0].Text = "x"
	c.System[0].Cache.TTL = time.Hour
	c.Messages[0].Parts[0].(*llm.Text).Text = "x"
	c.Messages[1].Parts[0].(*llm.ToolResult).Parts[0].(*llm.Text).Text = "x"
	c.Tools[0].Schema[0] = 'X'
	*c.Temperature = 1
	*c.ParallelToolCalls = false
	c.Stop[0] = "x"
	c.Reasoning.Effort = "x"
	c.ResponseFormat.Schema[0] = 'X'
	if diff := cmp.Diff(before, r); diff != "" {
		t.Errorf("changing the clone changed the original (-before +after):\n%s", diff)
	}
	if (*llm.Request)(nil).Clone() != nil {
		t.Error("nil clone is not nil")
	}
}
