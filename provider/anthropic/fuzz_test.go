package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

// decodeAll runs the stream decoder over body, checking the protocol: no
// panic, and either an error or chunks ending in exactly one Finish.
func decodeAll(t testing.TB, body []byte) {
	d := decoder{provider: "anthropic"}
	var chunks []llm.Chunk
	err := d.decode(bytes.NewReader(body), func(c llm.Chunk) bool {
		if c == nil {
			t.Fatal("nil chunk")
		}
		chunks = append(chunks, c)
		return true
	})
	if errors.Is(err, errStopped) {
		t.Fatal("decoder reported a stop nobody asked for")
	}
	finishes := 0
	for _, c := range chunks {
		if _, ok := c.(*llm.Finish); ok {
			finishes++
		}
	}
	if err == nil {
		if finishes != 1 {
			t.Fatalf("stream ended cleanly with %d Finish chunks", finishes)
		}
		if _, ok := chunks[len(chunks)-1].(*llm.Finish); !ok {
			t.Fatal("Finish is not the last chunk")
		}
	} else if finishes != 0 {
		t.Fatalf("error %v after a Finish", err)
	}
	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	_ = a.Response()
}

// fuzzSeeds are the recorded stream bodies plus hand-made edge cases.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, fx := range fixtures {
		for _, ex := range fx.load(t, filepath.Join("testdata", fx.file)) {
			seeds = append(seeds, ex.Body)
		}
	}
	return append(seeds,
		[]byte(okStream),
		[]byte(streamHead),
		[]byte("data: {\"type\":\"message_stop\"}\r\n\r\n"),
		[]byte("data: {\"type\":\"content_block_start\",\"index\":99999999,\"content_block\":{\"type\":\"text\"}}\n\n"),
		[]byte("data: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"),
		[]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"),
		[]byte(": comment\nretry: 10\nid: 1\ndata: {\"type\":\"ping\"}\n\n"),
		[]byte("data: {\"type\":\n"+"data: \"message_stop\"}\n\n"),
		[]byte{},
	)
}

func FuzzDecodeStream(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeAll(t, body)
	})
}

// TestDecodeStreamSoak mutates the seed streams at random for as long as
// -fuzztime says (a duration, or N iterations as "Nx"), without needing
// -fuzz; with no -fuzztime it runs a short pass.
func TestDecodeStreamSoak(t *testing.T) {
	deadline, iters := time.Time{}, 2000
	if f := flag.Lookup("test.fuzztime"); f != nil && f.Value.String() != "" && f.Value.String() != "0s" {
		v := f.Value.String()
		if n, ok := strings.CutSuffix(v, "x"); ok {
			iters, _ = strconv.Atoi(n)
		} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
			deadline, iters = time.Now().Add(d), 0
		}
	}
	seeds := fuzzSeeds(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; iters > 0 && i < iters || !deadline.IsZero() && time.Now().Before(deadline); i++ {
		body := mutate(rng, seeds)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic on input %q: %v", body, r)
				}
			}()
			decodeAll(t, body)
			for line := range bytes.SplitSeq(body, []byte("\n")) {
				if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					checkFastEvent(t, data)
				}
			}
		}()
	}
}

// mutate returns a corrupted copy of a random seed: bytes flipped,
// removed, duplicated, spliced from another seed, or the tail cut.
func mutate(rng *rand.Rand, seeds [][]byte) []byte {
	b := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
	for range 1 + rng.IntN(4) {
		if len(b) == 0 {
			b = append(b, seeds[rng.IntN(len(seeds))]...)
			continue
		}
		i := rng.IntN(len(b))
		switch rng.IntN(5) {
		case 0:
			b[i] = byte(rng.IntN(256))
		case 1:
			j := min(len(b), i+1+rng.IntN(32))
			b = append(b[:i], b[j:]...)
		case 2:
			j := min(len(b), i+1+rng.IntN(64))
			b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
		case 3:
			o := seeds[rng.IntN(len(seeds))]
			if len(o) > 0 {
				k := rng.IntN(len(o))
				b = append(b[:i], o[k:]...)
			}
		case 4:
			b = b[:i]
		}
	}
	return b
}

// FuzzFastEvent checks the fast path for stream events against
// encoding/json: whenever it accepts an input, it must decode exactly
// what encoding/json decodes.
func FuzzFastEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"locati"}}  `,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" weather \u00e9"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EtYD/+="}}`,
		`{ "type" : "content_block_delta" , "index" : 12 , "delta" : { "type" : "text_delta" , "text" : "x" , "extra" : [1, {"a": null}] } }`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","Text":"x"}}`,
		`{"type":"content_block_delta","index":1.5,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"content_block_delta","usage":"x","delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"message_stop"}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"ping"}`,
		`{"type":"content_block_stop","index":0,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"message_start","message":{"id":"m"}}`,
		`{"message":{"content":[],"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":3,"ephemeral_1h_input_tokens":0},"output_tokens":0}},"type":"message_start"}`,
		`{"content_block":{"id":"toolu_0","input":{},"name":"noop","type":"tool_use"},"index":0,"type":"content_block_start"}`,
		`{"content_block":{"id":"toolu_0","input":{"a":[1,"\u00e9"]},"name":"weather","type":"tool_use"},"index":1,"type":"content_block_start"}`,
		`{"content_block":{"input":null,"type":"tool_use"},"index":0,"type":"content_block_start"}`,
		`{"content_block":{"type":"thinking","thinking":"","signature":"sig"},"index":0,"type":"content_block_start"}`,
		`{"content_block":{"type":"redacted_thinking","data":"abc"},"index":0,"type":"content_block_start"}`,
		`{"delta":{"partial_json":"{\"n\":0}","type":"input_json_delta"},"index":0,"type":"content_block_delta"}`,
		`{"delta":{"type":"text_delta","text":"tab\there \ud83d\ude00 \u2028 \/ \b\f\r\n"},"index":0,"type":"content_block_delta"}`,
		`{"delta":{"type":"text_delta","text":"lone \ud83d x"},"index":0,"type":"content_block_delta"}`,
		`{"delta":{"stop_reason":"tool_use","stop_sequence":null},"type":"message_delta","usage":{"input_tokens":10,"cache_creation":null,"output_tokens":5}}`,
		`{"delta":{"stop_reason":null},"type":"message_delta","usage":{"output_tokens":-0,"input_tokens":123456789012345}}`,
		`{"usage":{"cache_creation":{"ephemeral_5m_input_tokens":1},"cache_creation":{"ephemeral_1h_input_tokens":2}},"type":"message_delta"}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"error","error":null,"message":null,"delta":null}`,
		`{"type":"content_block_stop","index":99999999999}`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastEvent(t, data)
	})
}

func checkFastEvent(t testing.TB, data []byte) {
	var fast wireEvent
	asked := names{model: "claude-sonnet-4-5", tools: []llm.ToolSpec{{Name: "noop"}, {Name: "weather"}}}
	if !fastEvent(data, &fast, &asked, new([]byte)) {
		return
	}
	var slow wireEvent
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", data, err)
	}
	if diff := cmp.Diff(slow, fast); diff != "" {
		t.Fatalf("fast path decodes %q differently (-encoding/json +fast):\n%s", data, diff)
	}
}

// The fast path takes every event of the recorded streams, so a stream
// the API sends is decoded without reflection, and decodes each exactly as
// encoding/json does.
func TestFastEventTakesRecordedEvents(t *testing.T) {
	taken := 0
	for _, fx := range fixtures {
		for _, ex := range fx.load(t, filepath.Join("testdata", fx.file)) {
			for line := range bytes.SplitSeq(ex.Body, []byte("\n")) {
				data, ok := bytes.CutPrefix(line, []byte("data: "))
				if !ok {
					continue
				}
				var ev wireEvent
				if !fastEvent(data, &ev, nil, new([]byte)) {
					t.Errorf("%s: the fast path refuses %s", fx.name, data)
					continue
				}
				checkFastEvent(t, data)
				taken++
			}
		}
	}
	if taken == 0 {
		t.Fatal("no events in the recordings")
	}
}

// A stream's repeated strings (types, the model, a tool's name) are the
// request's own, not copies.
func TestFastEventReusesNames(t *testing.T) {
	asked := names{model: "claude-sonnet-4-5", tools: []llm.ToolSpec{{Name: "noop"}}}
	var start, block wireEvent
	if !fastEvent([]byte(`{"type":"message_start","message":{"model":"claude-sonnet-4-5"}}`), &start, &asked, new([]byte)) ||
		!fastEvent([]byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"noop","input":{}}}`), &block, &asked, new([]byte)) {
		t.Fatal("the fast path refuses plain events")
	}
	if unsafe.StringData(start.Message.Model) != unsafe.StringData(asked.model) {
		t.Error("the model is a copy")
	}
	if unsafe.StringData(block.ContentBlock.Name) != unsafe.StringData(asked.tools[0].Name) {
		t.Error("the tool name is a copy")
	}
	data, scratch := []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"noop","input":{}}}`), new([]byte)
	if n := testing.AllocsPerRun(100, func() { fastEvent(data, &block, &asked, scratch) }); n > 1 {
		t.Errorf("a tool call's start costs %v allocations, want 1 (its id)", n)
	}
}
