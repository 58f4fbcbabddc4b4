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
					checkFastDelta(t, data)
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

// FuzzFastDelta checks the fast path for delta events against
// encoding/json: whenever it accepts an input, it must decode exactly
// what encoding/json decodes.
func FuzzFastDelta(f *testing.F) {
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastDelta(t, data)
	})
}

func checkFastDelta(t testing.TB, data []byte) {
	var fast wireEvent
	if !fastDelta(data, &fast) {
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
