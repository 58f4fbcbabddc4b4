package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/cputime"
	"github.com/reinhq/rein/session"
)

// BenchmarkTurnWithSSEClients times a 50-step turn (scripted model, no-op
// tool, memory store) driven through the API while clients stream the
// session: none, 200 that read every event (writes gathered over the
// default flush interval, or each event written as it comes), and 200
// that never read; with
// a model that answers at once (the clients' work competes with the run
// for the CPU) and one that takes 5ms a step. cpu-µs/step is the whole
// process's CPU time (server, run and the in-process clients), which a
// loaded machine does not distort the way it does the wall time.
func BenchmarkTurnWithSSEClients(b *testing.B) {
	type bench struct {
		name    string
		clients int
		read    bool
		delay   time.Duration
		flush   time.Duration // serve.Options.FlushInterval
	}
	var cases []bench
	for _, d := range []time.Duration{0, 5 * time.Millisecond} {
		cases = append(cases, bench{"clients=0", 0, true, d, 0}, bench{"clients=200/reading", 200, true, d, 0},
			bench{"clients=200/reading/flush=each", 200, true, d, -1}, bench{"clients=200/stalled", 200, false, d, 0})
	}
	for _, bc := range cases {
		b.Run(fmt.Sprintf("model=%v/%s", bc.delay, bc.name), func(b *testing.B) {
			fo, _ := longRun(50, 0)
			fo.flush = bc.flush
			f := newFixture(b, fo)
			var total, cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				_, entries := longRun(50, bc.delay)
				f.model.Add(entries...)
				id := f.create("")
				ctx, cancel := context.WithCancel(context.Background())
				stopClients := connect(b, f, ctx, id, bc.clients, bc.read)
				ended := turnEnded(ctx, f.store, id)
				b.StartTimer()
				start, cpu0 := time.Now(), cputime.Process()
				f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"go"}`, nil)
				<-ended
				total += time.Since(start)
				cpu += cputime.Process() - cpu0
				b.StopTimer()
				cancel()
				stopClients()
				f.waitIdle(id)
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/50, "µs/step")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/50, "cpu-µs/step")
		})
	}
}

// connect opens n event streams on id: readers read to the turn's end,
// the others never read.
func connect(b *testing.B, f *fixture, ctx context.Context, id session.ID, n int, read bool) func() {
	var wg sync.WaitGroup
	var conns []net.Conn
	for range n {
		if !read {
			c, err := net.Dial("tcp", f.ts.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", id, testToken)
			conns = append(conns, c)
			continue
		}
		s := f.openSSE(ctx, id, "")
		wg.Go(func() {
			defer s.Close()
			// Read as a remote client would, without decoding, so the
			// clients' own work on this machine stays small.
			for {
				line, err := s.r.ReadSlice('\n')
				if err != nil || bytes.Contains(line, []byte(`"type":"turn.end"`)) {
					return
				}
			}
		})
	}
	return func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}
}

// turnEnded is closed when id's log holds a turn.end.
func turnEnded(ctx context.Context, st session.Store, id session.ID) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range session.Follow(ctx, st, id, 0) {
			if _, ok := ev.Data.(*session.TurnEnd); ok || err != nil {
				return
			}
		}
	}()
	return done
}
