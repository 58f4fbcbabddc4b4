//go:build unix

package benchfull_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/provider/anthropic"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sqlite"
	"github.com/reinhq/rein/tool"
)

const model = "claude-sonnet-4-5"

var noop = &tool.Func{
	ToolSpec: tool.Spec{Name: "noop", Description: "Does nothing.", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Annotations: &tool.Annotations{ReadOnly: true}},
	Fn: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil },
}

// script is n model responses: n-1 calls of the no-op tool, each with its
// own id and arguments, then a final answer.
func script(n int) []llmtest.Entry {
	out := make([]llmtest.Entry, 0, n)
	for i := range n - 1 {
		out = append(out, llmtest.CallTool("toolu_"+strconv.Itoa(i), "noop", `{"n":`+strconv.Itoa(i)+`}`))
	}
	return append(out, llmtest.Reply("done"))
}

// run is one turn of n steps through the agent and the real adapter,
// over the in-memory store.
func run(b testing.TB, srv *llmtest.CannedServer, n int) {
	runOn(b, srv, n, session.NewMemStore())
}

// runOn is run over store.
func runOn(b testing.TB, srv *llmtest.CannedServer, n int, store session.Store) {
	m, err := anthropic.New(&anthropic.Options{APIKey: "test", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(&agent.Options{Model: m, Provider: "anthropic", ModelName: model, Tools: []tool.Tool{noop},
		System: "You run tools.", PromptCache: &llm.CacheHint{},
		Store: store, Limits: agent.Limits{MaxSteps: n + 1}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "Run the tool until told to stop."})
	if err != nil || res.Reason != session.EndCompleted {
		b.Fatalf("run ended %v: %v", res.Reason, err)
	}
}

// The benchmark's loop runs to the end, one request per step, each body
// longer than the last.
func TestFullStackLoop(t *testing.T) {
	srv := canned(t, 5)
	run(t, srv, 5)
	lengths := srv.Lengths()
	if len(lengths) != 5 {
		t.Fatalf("%d requests, want 5", len(lengths))
	}
	for i := 1; i < len(lengths); i++ {
		if lengths[i] <= lengths[i-1] {
			t.Errorf("body %d is %d bytes, not longer than the one before (%d)", i, lengths[i], lengths[i-1])
		}
	}
}

// BenchmarkFullStack runs an N-step tool loop (N model requests, N-1 tool
// calls) through agent.New with the real Anthropic adapter against a fake
// SSE provider, and, as its floor, the bare HTTP exchange of the same
// bytes: a plain client POSTing bodies of the sizes the agent sent and
// reading the same event streams. One op is one whole loop; µs/step and
// cpu-µs/step (process CPU) and allocs/step are per model request.
func BenchmarkFullStack(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("agent/N="+strconv.Itoa(n), func(b *testing.B) {
			srv := canned(b, n)
			measure(b, n, func() { run(b, srv, n) })
		})
		b.Run("floor/N="+strconv.Itoa(n), func(b *testing.B) {
			srv := canned(b, n)
			run(b, srv, n) // learn the body sizes
			lengths := srv.Lengths()
			body := bytes.Repeat([]byte("x"), lengths[len(lengths)-1])
			client := srv.Client()
			measure(b, n, func() {
				for _, l := range lengths {
					exchange(b, client, srv.URL+"/v1/messages", body[:l])
				}
			})
		})
	}
}

// BenchmarkFullStackStores is BenchmarkFullStack's agent loop, at the
// same lengths, over each durable store beside the in-memory one: what
// the log's durability costs a step end to end.
func BenchmarkFullStackStores(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) session.Store
	}{
		{"mem", func(*testing.B) session.Store { return session.NewMemStore() }},
		{"jsonl", func(b *testing.B) session.Store {
			st, err := jsonl.Open(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"sqlite", func(b *testing.B) session.Store {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, n := range []int{10, 100, 1000} {
		for _, s := range stores {
			b.Run(s.name+"/N="+strconv.Itoa(n), func(b *testing.B) {
				srv := canned(b, n)
				st := s.open(b)
				defer st.Close()
				measure(b, n, func() { runOn(b, srv, n, st) })
			})
		}
	}
}

func canned(b testing.TB, n int) *llmtest.CannedServer {
	srv, err := llmtest.NewCannedServer(b, model, script(n)...)
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// exchange POSTs body and reads the whole response.
func exchange(b *testing.B, client *http.Client, url string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

// measure runs op, one loop of n steps, b.N times and reports per step.
func measure(b *testing.B, n int, op func()) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		op()
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	steps := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/steps, "µs/step")
	b.ReportMetric(float64(cpu.Microseconds())/steps, "cpu-µs/step")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/steps, "allocs/step")
	b.ReportMetric(0, "ns/op")
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
