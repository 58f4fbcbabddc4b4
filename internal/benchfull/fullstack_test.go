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
	"slices"
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
// reading the same event streams. One op is a round: one whole loop of
// each, in turn (see rounds).
func BenchmarkFullStack(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			srv := canned(b, n)
			fsrv := canned(b, n)
			run(b, fsrv, n) // learn the body sizes
			lengths := fsrv.Lengths()
			body := bytes.Repeat([]byte("x"), lengths[len(lengths)-1])
			client := fsrv.Client()
			rounds(b, n,
				loop{"floor", func() {
					for _, l := range lengths {
						exchange(b, client, fsrv.URL+"/v1/messages", body[:l])
					}
				}},
				loop{"agent", func() { run(b, srv, n) }})
		})
	}
}

// BenchmarkFullStackStores is BenchmarkFullStack's agent loop, at the
// same lengths, over each durable store beside the in-memory one, in
// rounds of one loop over each (see rounds): what the log's durability
// costs a step end to end.
func BenchmarkFullStackStores(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) session.Store
	}{
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
				msrv, srv := canned(b, n), canned(b, n)
				mem := session.NewMemStore()
				st := s.open(b)
				defer st.Close()
				rounds(b, n,
					loop{"mem", func() { runOn(b, msrv, n, mem) }},
					loop{s.name, func() { runOn(b, srv, n, st) }})
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

// loop is one whole loop of a benchmark's steps.
type loop struct {
	name string
	run  func()
}

// rounds runs b.N rounds of the loops, each of n steps, one after another
// in each round, in reverse order every other round, so each sees the
// machine as the others do. Per step, over all rounds, it reports each
// loop's CPU time of the process (client, server, GC: name-cpu-µs/step),
// its wall time (name-µs/step) and its allocations (name-allocs/step);
// and for each loop after the first, the median over the rounds of the
// ratio of its CPU time to the first's in the same round
// (name/first-cpu), and of its wall time (name/first-wall).
func rounds(b *testing.B, n int, loops ...loop) {
	type tally struct {
		cpu, wall   time.Duration
		allocs      uint64
		cpuX, wallX []float64
	}
	t := make([]tally, len(loops))
	cpu := make([]time.Duration, len(loops))
	wall := make([]time.Duration, len(loops))
	var ms runtime.MemStats
	b.ResetTimer()
	for k := 0; b.Loop(); k++ {
		for j := range loops {
			i := j
			if k%2 == 1 {
				i = len(loops) - 1 - j
			}
			runtime.ReadMemStats(&ms)
			m0 := ms.Mallocs
			c0, w0 := cpuTime(), time.Now()
			loops[i].run()
			wall[i], cpu[i] = time.Since(w0), cpuTime()-c0
			runtime.ReadMemStats(&ms)
			t[i].cpu += cpu[i]
			t[i].wall += wall[i]
			t[i].allocs += ms.Mallocs - m0
		}
		for i := 1; i < len(loops); i++ {
			t[i].cpuX = append(t[i].cpuX, float64(cpu[i])/float64(cpu[0]))
			t[i].wallX = append(t[i].wallX, float64(wall[i])/float64(wall[0]))
		}
	}
	b.StopTimer()
	steps := float64(b.N * n)
	for i, l := range loops {
		b.ReportMetric(float64(t[i].cpu.Microseconds())/steps, l.name+"-cpu-µs/step")
		b.ReportMetric(float64(t[i].wall.Microseconds())/steps, l.name+"-µs/step")
		b.ReportMetric(float64(t[i].allocs)/steps, l.name+"-allocs/step")
		if i > 0 {
			b.ReportMetric(median(t[i].cpuX), l.name+"/"+loops[0].name+"-cpu")
			b.ReportMetric(median(t[i].wallX), l.name+"/"+loops[0].name+"-wall")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
