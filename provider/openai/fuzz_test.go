package openai

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

// decodeAll drives a decoder over body the way Stream does and checks the
// invariants every stream must keep, whatever the bytes: no panic, nothing
// after an error, Finish last and only once, usage before Finish.
func decodeAll(t testing.TB, api string, body []byte) {
	var chunks []llm.Chunk
	yield := func(c llm.Chunk, err error) bool {
		chunks = append(chunks, c)
		return true
	}
	var err error
	if api == "responses" {
		err = newRespDecoder("openai", "m", "").run(bytes.NewReader(body), yield)
	} else {
		err = newChatDecoder("openai", "m", "").run(bytes.NewReader(body), yield)
	}
	var a llm.Assembler
	for i, c := range chunks {
		if c == nil {
			t.Fatalf("nil chunk at %d", i)
		}
		if _, ok := c.(*llm.Finish); ok && i != len(chunks)-1 {
			t.Fatalf("finish at %d of %d", i, len(chunks))
		}
		a.Add(c)
	}
	finished := len(chunks) > 0
	if finished {
		_, finished = chunks[len(chunks)-1].(*llm.Finish)
	}
	if err != nil && finished {
		t.Fatalf("an error (%v) after the finish", err)
	}
	if err == nil && !finished {
		t.Fatal("no error and no finish")
	}
	if err != nil && !errors.Is(err, errTruncated) && !errors.Is(err, errEventTooLarge) {
		var pe *llm.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v (%T) is neither truncation nor a provider error", err, err)
		}
	}
	_ = a.Response()
}

// seeds returns the recorded streams plus hand-made edge cases.
func seeds(t testing.TB, api string) [][]byte {
	var out [][]byte
	if api == "chat" {
		for _, f := range []string{"fantasy__openai_chat_gpt-4o_parallel_tool_streaming.yaml", "fantasy__llama_cpp_gpt-oss_tool_streaming.yaml"} {
			for _, it := range loadCassette(t, f).Interactions {
				out = append(out, []byte(it.Response.Body))
			}
		}
		out = append(out,
			sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`),
			sse(`{"error":{"message":"x","code":429}}`),
			[]byte("data: [DONE]"),
			[]byte("data:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\ndata:\n\n"))
	} else {
		for _, it := range loadCassette(t, "fantasy__openai_responses_gpt-5_tool_streaming.yaml").Interactions {
			out = append(out, []byte(it.Response.Body))
		}
		out = append(out, jsonlToSSE(t, "vercel-ai__openai_responses_midstream_error.chunks.jsonl"),
			sse(`{"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"}`, `{"type":"response.completed","response":{}}`))
	}
	return out
}

func FuzzChatSSE(f *testing.F) {
	for _, s := range seeds(f, "chat") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) { decodeAll(t, "chat", body) })
}

func FuzzResponsesSSE(f *testing.F) {
	for _, s := range seeds(f, "responses") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) { decodeAll(t, "responses", body) })
}

// TestFuzzSoak runs both decoders over randomly mutated recorded streams
// for as long as -fuzztime says (e.g. go test -run TestFuzzSoak
// -fuzztime=30s), so both paths can soak in one command; go's own -fuzz
// runs one target at a time. Without -fuzztime it is skipped.
func TestFuzzSoak(t *testing.T) {
	d, n := fuzzBudget()
	if d == 0 && n == 0 {
		t.Skip("pass -fuzztime=30s (or -fuzztime=10000x) to soak the SSE decoders")
	}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	apis := []string{"chat", "responses"}
	corpus := map[string][][]byte{"chat": seeds(t, "chat"), "responses": seeds(t, "responses")}
	deadline := time.Now().Add(d)
	runs := 0
	for ; (n > 0 && runs < n) || (n == 0 && time.Now().Before(deadline)); runs++ {
		api := apis[runs%2]
		src := corpus[api][rng.IntN(len(corpus[api]))]
		body := mutate(rng, src)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic %v on %s input %q", r, api, body)
				}
			}()
			decodeAll(t, api, body)
		}()
		if t.Failed() {
			t.Fatalf("on %s input %q", api, body)
		}
	}
	t.Logf("%d mutated streams decoded", runs)
}

// fuzzBudget reads -fuzztime: a duration or a count "Nx".
func fuzzBudget() (time.Duration, int) {
	fl := flag.Lookup("test.fuzztime")
	if fl == nil {
		return 0, 0
	}
	v := fl.Value.String()
	if n, ok := strings.CutSuffix(v, "x"); ok {
		c, _ := strconv.Atoi(n)
		return 0, c
	}
	dur, _ := time.ParseDuration(v)
	return dur, 0
}

// mutate damages a stream the ways networks and servers do: truncation,
// flipped bytes, dropped or duplicated spans, spliced JSON tokens.
func mutate(rng *rand.Rand, src []byte) []byte {
	b := bytes.Clone(src)
	tokens := []string{"\n\n", "data: ", "[DONE]", "null", "{", "}", `"`, "\r", `"index":-1`, `"choices":[]`, `"type":"error"`, `"output_index":99999`}
	for range 1 + rng.IntN(4) {
		if len(b) == 0 {
			b = append(b, tokens[rng.IntN(len(tokens))]...)
			continue
		}
		i := rng.IntN(len(b))
		switch rng.IntN(5) {
		case 0:
			b = b[:i]
		case 1:
			b[i] ^= byte(1 << rng.IntN(8))
		case 2:
			j := min(len(b), i+rng.IntN(64))
			b = append(b[:i], b[j:]...)
		case 3:
			j := min(len(b), i+rng.IntN(64))
			b = append(b[:j], append(bytes.Clone(b[i:j]), b[j:]...)...)
		case 4:
			tok := tokens[rng.IntN(len(tokens))]
			b = append(b[:i], append([]byte(tok), b[i:]...)...)
		}
	}
	return b
}
