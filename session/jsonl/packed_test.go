package jsonl

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/session"
)

// packedSamples are packed lines as encodePacked writes them.
func packedSamples(t testing.TB) [][]byte {
	t0 := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)
	chunk := func(text string) *session.AssistantChunk {
		return &session.AssistantChunk{Step: 2, Deltas: []session.ChunkDelta{{Kind: "text", Text: text}, {Index: 1, Kind: "tool_call", ID: "c1", Name: "read", Text: `{"pa`}}}
	}
	runs := [][]session.Event{
		{{Seq: 7, Time: t0, Turn: "t", Run: "r", Data: chunk("a")}, {Seq: 8, Time: t0.Add(time.Millisecond), Turn: "t", Run: "r", Data: chunk("b\n\"c\"")}},
		{{Seq: 1, Time: t0, Session: "other", ParentRun: "p", Agent: "é x", Data: chunk("")},
			{Seq: 2, Time: t0.Add(-time.Second), Session: "other", ParentRun: "p", Agent: "é x", Data: &session.AssistantChunk{}},
			{Seq: 3, Time: t0, Session: "other", ParentRun: "p", Agent: "é x", Data: &session.AssistantChunk{Deltas: []session.ChunkDelta{}}}},
		{{Seq: 4, Time: t0, Turn: "q\"uote", Data: chunk("x")}, {Seq: 5, Time: t0, Turn: "q\"uote", Data: chunk("y")}},
	}
	var lines [][]byte
	for _, run := range runs {
		b, err := encodePacked(nil, "s", run)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b[:len(b)-1])
	}
	return lines
}

// TestPackedLinesTakeTheDirectPath: the packed lines this package writes
// with plain header strings are read directly, as encoding/json reads them.
func TestPackedLinesTakeTheDirectPath(t *testing.T) {
	for i, line := range packedSamples(t) {
		var d lineDecoder
		got, ok := d.packedFast(nil, line)
		if ok != (i != 2) { // the third has an escaped turn
			t.Errorf("packedFast(%s) ok = %v", line, ok)
		}
		if !ok {
			continue
		}
		want, err := decodePacked(nil, line)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: direct decoding differs (-encoding/json +direct):\n%s", line, diff)
		}
	}
}

// FuzzPackedLine: whatever the direct packed decoder accepts,
// encoding/json accepts too and decodes the same.
func FuzzPackedLine(f *testing.F) {
	for _, line := range packedSamples(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"pack":2,"seq":1,"time":"2026-01-01T00:00:00Z","type":"assistant.chunk","dt":[0,-0],"data":[{"step":1,"deltas":[]},null]}`))
	f.Add([]byte(`{"pack":1,"seq":1,"time":"2026-01-01T00:00:00Z","turn":"","type":"assistant.chunk","dt":[01],"data":[{}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var d lineDecoder
		got, ok := d.packedFast(nil, line)
		if !ok {
			return
		}
		want, err := decodePacked(nil, line)
		if err != nil {
			t.Fatalf("%q: the direct decoder accepted what encoding/json refuses: %v", line, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: direct decoding differs (-encoding/json +direct):\n%s", line, diff)
		}
	})
}
