package main

import (
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// BenchmarkVersionColdStart execs 'rein --version': process start to exit.
func BenchmarkVersionColdStart(b *testing.B) {
	for b.Loop() {
		if out, err := exec.Command(reinBin, "--version").CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

// BenchmarkRunTimeToFirstRequest execs 'rein run' against the fake server
// and reports the time from exec to the first model request arriving
// (ttfr-ns/op), with an in-memory store and the default tools.
func BenchmarkRunTimeToFirstRequest(b *testing.B) {
	e := newEnv(b)
	var (
		mu      sync.Mutex
		arrived time.Time
	)
	m := llmtest.NewModel()
	srv := llmtest.NewServer(b, m)
	var total time.Duration
	for b.Loop() {
		m.Add(llmtest.Respond(func(*llm.Request) llmtest.Entry {
			mu.Lock()
			arrived = time.Now()
			mu.Unlock()
			return llmtest.Reply("ok")
		}))
		cmd := exec.Command(reinBin, "run", "--model", wires[0].model, "--base-url", srv.URL, "--store", "mem:", "--cwd", b.TempDir(), "hi")
		cmd.Env = append(e.vars, wires[0].env()...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		mu.Lock()
		total += arrived.Sub(start)
		mu.Unlock()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ttfr-ns/op")
}
