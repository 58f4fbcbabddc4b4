package session

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

// fastTypes are the payloads with a direct decoder.
var fastTypes = []string{TypeStepStart, TypeStepEnd, TypeTurnStart, TypeTurnEnd, TypeAssistantChunk,
	TypeAssistantMessage, TypeToolCall, TypeToolResult, TypeUserMessage, TypeContextMessage, TypeSteeringMessage}

func fastSamples() []Payload {
	text := "quote \" back \\ tab\t line\n é 😀 <a href=\"x\">&amp;</a> \u2028"
	return []Payload{
		&StepStart{Step: 3},
		&StepEnd{Step: 2, Usage: llm.Usage{Input: 10, Output: 5, CacheRead: 7, CacheWrite: 1, CacheWrite5m: 1}, Finish: llm.FinishToolCalls},
		&TurnStart{Trigger: TriggerPrompt},
		&TurnEnd{Reason: EndError, Cause: "user", Message: text, Code: "E"},
		&AssistantChunk{Step: 1, Deltas: []ChunkDelta{{Kind: "text", Text: text}, {Index: 1, Kind: "tool_call", ID: "c1", Name: "read"}}},
		&AssistantChunk{Step: 1, Deltas: []ChunkDelta{}},
		&AssistantMessage{Parts: []llm.Part{&llm.Text{Text: text}, &llm.ToolCall{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)},
			&llm.Reasoning{Text: "hm"}}, Provenance: &llm.Provenance{Provider: "p", Model: "m", State: json.RawMessage(`{"k":[1,2]}`)},
			Usage: llm.Usage{Input: 100, Output: 20}, Finish: llm.FinishStop, Interrupted: true},
		&ToolCall{CallID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a.go","n":[1,{"x":null}]}`), Origin: "mcp", Coerced: []string{"n", "x"}},
		&ToolCall{CallID: "c2", Name: "ls"},
		&ToolResult{CallID: "c1", Name: "read", Parts: []llm.Part{&llm.Text{Text: text}, &llm.Text{Text: "cached", Cache: &llm.CacheHint{}}},
			IsError: true, Code: "X", Outcome: OutcomeExecute, Duration: 1500 * time.Millisecond, Interrupted: true},
		&ToolResult{CallID: "c3"},
		&UserMessage{Parts: []llm.Part{&llm.Text{Text: "hi"}}, Source: SourceUser},
		&ContextMessage{Parts: []llm.Part{&llm.Text{Text: ""}}, Source: "hook"},
		&SteeringMessage{Parts: []llm.Part{&llm.Text{Text: "go on"}}},
	}
}

// reference decodes data with encoding/json alone.
func reference(typ string, data []byte) (Payload, error) {
	p := newPayload(typ)
	return p, json.Unmarshal(data, p)
}

// TestFastPayloadsTakeTheDirectPath: what this package writes is read by
// the direct decoders, and they give what encoding/json gives.
func TestFastPayloadsTakeTheDirectPath(t *testing.T) {
	for _, p := range fastSamples() {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := fastPayload(p.EventType(), data, nil)
		if !ok {
			t.Errorf("%s: the direct decoder gave up on %s", p.EventType(), data)
			continue
		}
		want, err := reference(p.EventType(), data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s: direct decoding differs (-encoding/json +direct):\n%s", p.EventType(), data, diff)
		}
	}
}

// FuzzFastPayload: whatever the direct decoders accept, encoding/json
// accepts too and decodes the same.
func FuzzFastPayload(f *testing.F) {
	kind := func(typ string) uint8 { return uint8(slices.Index(fastTypes, typ)) }
	for _, p := range fastSamples() {
		data, _ := json.Marshal(p)
		f.Add(kind(p.EventType()), data)
	}
	f.Add(kind(TypeAssistantChunk), []byte(`{"deltas":[{"kind":"a","text":"x"}],"deltas":[{"kind":"b"}]}`))
	f.Add(kind(TypeToolResult), []byte(`{"parts":[{"type":"text","text":"\ud83d\ude00\u00e9"}],"parts":[]}`))
	f.Add(kind(TypeToolCall), []byte(`{"args":{"a":1},"args":[1,,2]}`))
	f.Add(kind(TypeStepEnd), []byte(`{"step":01,"usage":{"input":1},"usage":{"output":2}}`))
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		typ := fastTypes[int(k)%len(fastTypes)]
		got, ok := fastPayload(typ, data, &recent{s: [8]string{"c1", "read", "a"}})
		if !ok {
			return
		}
		want, err := reference(typ, data)
		if err != nil {
			t.Fatalf("%s %q: the direct decoder accepted what encoding/json refuses: %v", typ, data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s %q: direct decoding differs (-encoding/json +direct):\n%s", typ, data, diff)
		}
	})
}
