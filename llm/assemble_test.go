package llm_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
)

func assemble(a *llm.Assembler, chunks ...llm.Chunk) *llm.Assembler {
	if a == nil {
		a = &llm.Assembler{}
	}
	for _, c := range chunks {
		a.Add(c)
	}
	return a
}

func TestAssembler(t *testing.T) {
	prov := &llm.Provenance{Provider: "p", Model: "m"}
	tests := []struct {
		name    string
		prefix  string
		chunks  []llm.Chunk
		want    llm.Message
		partial []llm.Part // nil: same parts as want minus tool calls
		finish  llm.FinishReason
		usage   llm.Usage
	}{
		{
			name: "blocks",
			chunks: []llm.Chunk{
				&llm.BlockStart{Index: 0, Kind: llm.BlockReasoning},
				&llm.ReasoningDelta{Index: 0, Text: "think "},
				&llm.ReasoningDelta{Index: 0, Text: "hard"},
				&llm.ReasoningDelta{Index: 0, Signature: "sig"},
				&llm.BlockEnd{Index: 0},
				&llm.BlockStart{Index: 1, Kind: llm.BlockText},
				&llm.TextDelta{Index: 1, Text: "Hello"},
				&llm.TextDelta{Index: 1, Text: ", world"},
				&llm.BlockEnd{Index: 1},
				&llm.BlockStart{Index: 2, Kind: llm.BlockToolCall, ID: "c1", Name: "echo"},
				&llm.ToolCallDelta{Index: 2, Args: `{"a":`},
				&llm.ToolCallDelta{Index: 2, Args: `1}`},
				&llm.BlockEnd{Index: 2},
				&llm.UsageChunk{Usage: llm.Usage{Input: 10, Output: 3}},
				&llm.Finish{Reason: llm.FinishToolCalls, Provenance: prov},
			},
			want: llm.Message{Role: llm.RoleAssistant, Provenance: prov, Parts: []llm.Part{
				&llm.Reasoning{Text: "think hard", Signature: "sig"},
				&llm.Text{Text: "Hello, world"},
				&llm.ToolCall{ID: "c1", Name: "echo", Args: json.RawMessage(`{"a":1}`)},
			}},
			finish: llm.FinishToolCalls,
			usage:  llm.Usage{Input: 10, Output: 3},
		},
		{
			name: "delta only, two parallel calls with ids and names in deltas",
			chunks: []llm.Chunk{
				&llm.TextDelta{Index: 0, Text: "ok"},
				&llm.ToolCallDelta{Index: 1, ID: "a", Name: "x", Args: `{}`},
				&llm.ToolCallDelta{Index: 2, ID: "b", Name: "y"},
				&llm.ToolCallDelta{Index: 1, Args: ``},
				&llm.ToolCallDelta{Index: 2, Args: `{"q":"z"}`},
				&llm.Finish{Reason: llm.FinishStop},
			},
			want: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
				&llm.Text{Text: "ok"},
				&llm.ToolCall{ID: "a", Name: "x", Args: json.RawMessage(`{}`)},
				&llm.ToolCall{ID: "b", Name: "y", Args: json.RawMessage(`{"q":"z"}`)},
			}},
			finish: llm.FinishToolCalls, // a stop with calls is a tool-calls finish
		},
		{
			name:   "synthetic ids with prefix",
			prefix: "s3",
			chunks: []llm.Chunk{
				&llm.ToolCallDelta{Index: 0, Name: "x", Args: `{}`},
				&llm.ToolCallDelta{Index: 4, Name: "y"},
				&llm.Finish{Reason: llm.FinishToolCalls},
			},
			want: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
				&llm.ToolCall{ID: "call_s3_0", Name: "x", Args: json.RawMessage(`{}`)},
				&llm.ToolCall{ID: "call_s3_4", Name: "y"},
			}},
			finish: llm.FinishToolCalls,
		},
		{
			name: "stragglers after block end are ignored",
			chunks: []llm.Chunk{
				&llm.TextDelta{Index: 0, Text: "kept"},
				&llm.BlockEnd{Index: 0},
				&llm.TextDelta{Index: 0, Text: " dropped"},
				&llm.BlockStart{Index: 0, Kind: llm.BlockText},
				&llm.TextDelta{Index: 0, Text: " dropped too"},
				&llm.BlockStart{Index: 1, Kind: llm.BlockToolCall, ID: "c", Name: "n"},
				&llm.BlockEnd{Index: 1},
				&llm.ToolCallDelta{Index: 1, Args: `{"late":true}`},
				&llm.BlockEnd{Index: 7}, // unknown block: ignored
				&llm.Finish{Reason: llm.FinishToolCalls},
			},
			want: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
				&llm.Text{Text: "kept"},
				&llm.ToolCall{ID: "c", Name: "n"},
			}},
			finish: llm.FinishToolCalls,
		},
		{
			name: "interrupted stream",
			chunks: []llm.Chunk{
				&llm.TextDelta{Index: 0, Text: "half an ans"},
				&llm.ToolCallDelta{Index: 1, ID: "c", Name: "n", Args: `{"pa`},
				&llm.UsageChunk{Usage: llm.Usage{Input: 5}},
			},
			want: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
				&llm.Text{Text: "half an ans"},
				&llm.ToolCall{ID: "c", Name: "n", Args: json.RawMessage(`{"pa`)},
			}},
			partial: []llm.Part{&llm.Text{Text: "half an ans"}},
			finish:  llm.FinishAborted,
			usage:   llm.Usage{Input: 5},
		},
		{
			name: "usage merges later non-zero counters",
			chunks: []llm.Chunk{
				&llm.UsageChunk{Usage: llm.Usage{Input: 100, CacheRead: 50, Output: 1}},
				&llm.TextDelta{Index: 0, Text: "x"},
				&llm.UsageChunk{Usage: llm.Usage{Output: 42, Reasoning: 7}},
				&llm.Finish{Reason: llm.FinishMaxTokens},
			},
			want:   llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "x"}}},
			finish: llm.FinishMaxTokens,
			usage:  llm.Usage{Input: 100, CacheRead: 50, Output: 42, Reasoning: 7},
		},
		{
			name: "empty text and reasoning blocks are left out",
			chunks: []llm.Chunk{
				&llm.BlockStart{Index: 0, Kind: llm.BlockText},
				&llm.BlockEnd{Index: 0},
				&llm.BlockStart{Index: 1, Kind: llm.BlockReasoning},
				&llm.BlockEnd{Index: 1},
				&llm.ReasoningDelta{Index: 2, Redacted: "opaque"},
				&llm.Finish{Reason: llm.FinishStop},
			},
			want:   llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Reasoning{Redacted: "opaque"}}},
			finish: llm.FinishStop,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assemble(&llm.Assembler{IDPrefix: tt.prefix}, tt.chunks...)
			if diff := cmp.Diff(tt.want, a.Message()); diff != "" {
				t.Errorf("Message (-want +got):\n%s", diff)
			}
			wantPartial := tt.partial
			if wantPartial == nil {
				for _, p := range tt.want.Parts {
					if _, ok := p.(*llm.ToolCall); !ok {
						wantPartial = append(wantPartial, p)
					}
				}
			}
			if diff := cmp.Diff(wantPartial, a.Partial().Parts, cmp.Comparer(func(x, y []llm.Part) bool { return len(x) == 0 && len(y) == 0 || cmp.Equal(x, y) })); diff != "" {
				t.Errorf("Partial (-want +got):\n%s", diff)
			}
			if got := a.FinishReason(); got != tt.finish {
				t.Errorf("FinishReason = %q, want %q", got, tt.finish)
			}
			if diff := cmp.Diff(tt.usage, a.Usage()); diff != "" {
				t.Errorf("Usage (-want +got):\n%s", diff)
			}
			res := a.Response()
			if res.Finish != tt.finish || res.Usage != tt.usage {
				t.Errorf("Response = %+v", res)
			}
		})
	}
}

func TestAssemblerSyntheticIDIsStable(t *testing.T) {
	chunks := []llm.Chunk{
		&llm.ToolCallDelta{Index: 0, Name: "read", Args: `{"path":"a"}`},
		&llm.Finish{Reason: llm.FinishToolCalls},
	}
	a := assemble(nil, chunks...)
	first := a.Message().ToolCalls()[0].ID
	if !strings.HasPrefix(string(first), "call_") || !strings.HasSuffix(string(first), "_0") {
		t.Errorf("synthetic id = %q, want call_<hash>_0", first)
	}
	if again := a.Message().ToolCalls()[0].ID; again != first {
		t.Errorf("second Message gives id %q, first gave %q", again, first)
	}
	if other := assemble(nil, chunks...).Message().ToolCalls()[0].ID; other != first {
		t.Errorf("the same stream assembled again gives %q, want %q", other, first)
	}
	diff := assemble(nil, &llm.ToolCallDelta{Index: 0, Name: "read", Args: `{"path":"b"}`}).Message().ToolCalls()[0].ID
	if diff == first {
		t.Errorf("different calls share the synthetic id %q", diff)
	}
}

func TestAssemblerProvenanceFallbackAndReset(t *testing.T) {
	def := &llm.Provenance{Provider: "fallback", Model: "m"}
	a := &llm.Assembler{Provenance: def, IDPrefix: "p"}
	assemble(a, &llm.TextDelta{Text: "x"}, &llm.Finish{Reason: llm.FinishStop})
	if a.Message().Provenance != def {
		t.Errorf("provenance = %+v, want the fallback", a.Message().Provenance)
	}
	if !a.Finished() {
		t.Error("Finished() = false after a Finish")
	}
	a.Reset()
	if a.Finished() || len(a.Message().Parts) != 0 || a.Usage() != (llm.Usage{}) {
		t.Errorf("Reset left state: %+v", a.Response())
	}
	if a.IDPrefix != "p" || a.Provenance != def {
		t.Error("Reset dropped IDPrefix or Provenance")
	}
}

func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6}, "text")
	f.Add([]byte{2, 2, 4, 2, 3, 6, 6}, `{"a":`)
	f.Add([]byte{5, 5, 1, 0, 4, 4, 3}, "")
	f.Fuzz(func(t *testing.T, ops []byte, s string) {
		var a llm.Assembler
		explicitIDs := false // a provider may repeat its own ids; only synthetic ones must be unique
		for i, op := range ops {
			idx := int(op>>3) % 4
			switch op % 7 {
			case 0:
				id := llm.CallID(s[:min(len(s), i)])
				explicitIDs = explicitIDs || id != ""
				a.Add(&llm.BlockStart{Index: idx, Kind: []llm.BlockKind{llm.BlockText, llm.BlockReasoning, llm.BlockToolCall}[i%3], ID: id})
			case 1:
				a.Add(&llm.TextDelta{Index: idx, Text: s})
			case 2:
				a.Add(&llm.ToolCallDelta{Index: idx, Name: "n" + strconv.Itoa(idx), Args: s})
			case 3:
				a.Add(&llm.ReasoningDelta{Index: idx, Text: s, Signature: s})
			case 4:
				a.Add(&llm.BlockEnd{Index: idx})
			case 5:
				a.Add(&llm.UsageChunk{Usage: llm.Usage{Input: int64(i), Output: int64(op)}})
			case 6:
				a.Add(&llm.Finish{Reason: llm.FinishStop})
			}
		}
		msg := a.Message()
		partial := a.Partial()
		seen := map[llm.CallID]bool{}
		for _, c := range msg.ToolCalls() {
			if c.ID == "" {
				t.Fatal("tool call without an id")
			}
			if seen[c.ID] && !explicitIDs {
				t.Fatalf("duplicate tool call id %q", c.ID)
			}
			seen[c.ID] = true
		}
		if len(partial.ToolCalls()) != 0 {
			t.Fatal("Partial kept tool calls")
		}
		if !a.Finished() && a.FinishReason() != llm.FinishAborted {
			t.Fatalf("unfinished stream has finish %q", a.FinishReason())
		}
		if _, err := json.Marshal(msg); err != nil {
			t.Fatalf("assembled message does not encode: %v", err)
		}
	})
}

func FuzzUnmarshalPart(f *testing.F) {
	for _, s := range []string{
		`{"type":"text","text":"hi","cache":{"ttl":5}}`,
		`{"type":"tool_call","id":"c","name":"n","args":{"x":[1,2]}}`,
		`{"type":"tool_call","id":"c","name":"n","args_text":"{bad"}`,
		`{"type":"tool_result","call_id":"c","parts":[{"type":"text","text":"r"}],"is_error":true}`,
		`{"type":"image","data":"AQI=","media_type":"image/png"}`,
		`{"type":"document","url":"u","title":"t"}`,
		`{"type":"reasoning","redacted":"x"}`,
		`{"type":"nope"}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := llm.UnmarshalPart(b)
		if err != nil {
			return
		}
		out, err := llm.MarshalPart(p)
		if err != nil {
			t.Fatalf("decoded part %#v does not encode: %v", p, err)
		}
		again, err := llm.UnmarshalPart(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		out2, err := llm.MarshalPart(again)
		if err != nil || string(out) != string(out2) {
			t.Fatalf("encoding is not stable:\n%s\n%s (%v)", out, out2, err)
		}
	})
}

func BenchmarkAssembler(b *testing.B) {
	// One response: a text block of 200 deltas, then a tool call of 50.
	var chunks []llm.Chunk
	chunks = append(chunks, &llm.BlockStart{Index: 0, Kind: llm.BlockText})
	for range 200 {
		chunks = append(chunks, &llm.TextDelta{Index: 0, Text: "token "})
	}
	chunks = append(chunks, &llm.BlockEnd{Index: 0}, &llm.BlockStart{Index: 1, Kind: llm.BlockToolCall, ID: "c", Name: "write"})
	for range 50 {
		chunks = append(chunks, &llm.ToolCallDelta{Index: 1, Args: `"abcd",`})
	}
	chunks = append(chunks, &llm.BlockEnd{Index: 1}, &llm.UsageChunk{Usage: llm.Usage{Input: 1, Output: 2}}, &llm.Finish{Reason: llm.FinishToolCalls})

	b.Run("chunk", func(b *testing.B) {
		var a llm.Assembler
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(chunks) {
				a.Reset()
				i = 0
			}
			a.Add(chunks[i])
			i++
		}
	})
	b.Run("response", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a llm.Assembler
			for _, c := range chunks {
				a.Add(c)
			}
			_ = a.Message()
		}
		b.ReportMetric(float64(len(chunks)), "chunks/op")
	})
}
