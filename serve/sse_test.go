package serve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/tooltest"
)

// longRun scripts a turn of steps steps: steps-1 calls of a read-only no-op
// tool, then an answer; each response waits delay first.
func longRun(steps int, delay time.Duration) (*fixtureOptions, []llmtest.Entry) {
	noop := tooltest.NewRecorder("noop", &tool.Annotations{ReadOnly: true})
	var entries []llmtest.Entry
	for i := 1; i < steps; i++ {
		entries = append(entries, llmtest.CallTool(fmt.Sprintf("c%d", i), "noop", `{}`).WithDelay(delay))
	}
	entries = append(entries, llmtest.Reply("done").WithDelay(delay))
	return &fixtureOptions{tools: []tool.Tool{noop}}, entries
}

// minEvents is a floor on the events of a longRun: step.start,
// assistant.message, tool.call, tool.result and step.end per step.
const minEvents = 5 * 50

// TestSSEResumeAfterEveryK: a client that reads up to event k, disconnects
// and reconnects with Last-Event-ID: k receives exactly the events after
// k, live, for 100 random k over a 50-step run.
func TestSSEResumeAfterEveryK(t *testing.T) {
	fo, entries := longRun(50, 2*time.Millisecond)
	f := newFixture(t, fo, entries...)
	id := f.create("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const clients = 100
	rng := rand.New(rand.NewPCG(1, 2))
	ks := make([]int64, clients)
	for i := range ks {
		ks[i] = 1 + rng.Int64N(minEvents)
	}
	var wg sync.WaitGroup
	errs := make([]error, clients)
	got := make([][]int64, clients)
	ready := make(chan struct{}, clients)
	for i, k := range ks {
		wg.Go(func() {
			first, err := f.dialSSE(ctx, id, "")
			ready <- struct{}{}
			if err != nil {
				errs[i] = err
				return
			}
			evs, err := first.read(func(e wireEvent) bool { return e.Seq == k })
			first.Close()
			if err != nil {
				errs[i] = fmt.Errorf("first connection, k=%d: %w", k, err)
				return
			}
			for _, e := range evs {
				if e.Seq > 0 {
					got[i] = append(got[i], e.Seq)
				}
			}
			again, err := f.dialSSE(ctx, id, strconv.FormatInt(k, 10))
			if err != nil {
				errs[i] = err
				return
			}
			defer again.Close()
			evs, err = again.read(func(e wireEvent) bool { return e.Type == session.TypeTurnEnd })
			if err != nil {
				errs[i] = fmt.Errorf("after Last-Event-ID %d: %w", k, err)
				return
			}
			var after []int64
			for _, e := range evs {
				if e.Seq > 0 {
					after = append(after, e.Seq)
				}
			}
			if len(after) == 0 || after[0] != k+1 {
				errs[i] = fmt.Errorf("after Last-Event-ID %d the stream starts at %v", k, after[:min(len(after), 1)])
			}
			got[i] = append(got[i], after...)
		})
	}
	for range clients {
		<-ready
	}
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"go"}`, nil)
	wg.Wait()
	f.waitIdle(id)
	n := int64(len(f.events(id)))
	if n < minEvents {
		t.Fatalf("the run wrote %d events, fewer than the %d the test assumes", n, minEvents)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if int64(len(got[i])) != n {
			t.Fatalf("client %d (k=%d) saw %d events, want %d", i, ks[i], len(got[i]), n)
		}
		for j, seq := range got[i] {
			if seq != int64(j+1) {
				t.Fatalf("client %d (k=%d): event %d has seq %d: lost or repeated", i, ks[i], j, seq)
			}
		}
	}
}

// TestStalledClientsDoNotStallRun: 200 clients that open the stream and
// never read do not keep a 50-step run from finishing.
func TestStalledClientsDoNotStallRun(t *testing.T) {
	fo, entries := longRun(50, 0)
	f := newFixture(t, fo, entries...)
	id := f.create("")
	addr := f.ts.Listener.Addr().String()
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", id, testToken)
	}
	start := time.Now()
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"go"}`, nil)
	f.waitIdle(id)
	t.Logf("50 steps with 200 stalled clients: %v", time.Since(start))
	evs := f.events(id)
	if end, ok := evs[len(evs)-1].Data.(*session.TurnEnd); !ok || end.Reason != session.EndCompleted {
		t.Fatalf("last event %+v, want a completed turn", evs[len(evs)-1].Data)
	}
}
