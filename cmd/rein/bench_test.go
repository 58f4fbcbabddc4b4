package main

import (
	"fmt"
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

// BenchmarkChatView renders a chat frame after a streamed delta, with 10 and
// 10,000 earlier blocks: the cost follows the screen, not the session.
func BenchmarkChatView(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			m := newChatModel(&app{}, &agentFlags{}, &setup{target: target{provider: providers[0], model: "claude-sonnet-4-5"}}, nil)
			m.width, m.height = 100, 40
			for i := range n {
				m.blocks = append(m.blocks, block{kind: blockUser, text: fmt.Sprintf("question %d", i)},
					block{kind: blockAssistant, done: true, text: "An answer with `code` and\n- a list\n- of things"})
			}
			m.View()
			for b.Loop() {
				m.appendText(blockAssistant, "more ")
				m.View()
			}
		})
	}
}
