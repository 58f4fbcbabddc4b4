package dbos_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
)

// gate forwards TCP connections to a Postgres server, except that it
// closes the next refuse connections as soon as they arrive, as a
// server too busy to answer would leave a client without a connection.
type gate struct {
	ln      net.Listener
	to      string
	refuse  atomic.Int64
	refused atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

// newGate starts a gate in front of the server of url and returns it
// with url pointed at it; t's end closes it.
func newGate(t *testing.T, rawURL string) (*gate, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, to: u.Host}
	g.wg.Add(1)
	go g.serve()
	t.Cleanup(g.close)
	u.Host = ln.Addr().String()
	return g, u.String()
}

func (g *gate) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		if g.refuse.Load() > 0 {
			g.refuse.Add(-1)
			g.refused.Add(1)
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", g.to)
		if err != nil {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, c, up)
		g.mu.Unlock()
		g.wg.Add(2)
		go g.pipe(up, c)
		go g.pipe(c, up)
	}
}

func (g *gate) pipe(dst, src net.Conn) {
	defer g.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (g *gate) close() {
	g.ln.Close()
	g.mu.Lock()
	for _, c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// drop closes every connection the gate forwards: to their clients they
// are dead, as after a server restart.
func (g *gate) drop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

// failedEnqueues counts the enqueues DBOS logs as failed.
type failedEnqueues struct{ n atomic.Int64 }

func (h *failedEnqueues) Enabled(context.Context, slog.Level) bool { return true }
func (h *failedEnqueues) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *failedEnqueues) WithGroup(string) slog.Handler            { return h }
func (h *failedEnqueues) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && strings.Contains(r.Message, "insert workflow status") {
		h.n.Add(1)
	}
	return nil
}

// recorded counts the workflows of id in the system database.
func recorded(t *testing.T, url, system, id string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	q := `SELECT count(*) FROM ` + pgx.Identifier{system, "workflow_status"}.Sanitize() + ` WHERE workflow_uuid = $1`
	if err := conn.QueryRow(ctx, q, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A submit that finds its connections dead and cannot open new ones
// tries again until it can, and the turn is enqueued once.
func TestSubmitRetriesWhileTheServerIsUnreachable(t *testing.T) {
	raw, _, system := pgSchemas(t)
	g, gated := newGate(t, raw)
	var failed failedEnqueues
	client, err := dbos.Open(context.Background(), gated, &dbos.Options{Schema: system, Logger: slog.New(&failed)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	g.refuse.Store(2)
	g.drop()
	id, err := client.Submit(context.Background(), &durable.SubmitRequest{Queue: "q", Turn: durable.Turn{Session: "s1", Prompt: "one"}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if failed.n.Load() == 0 {
		t.Fatal("no enqueue failed: the submit never met the dead connection")
	}
	if n := recorded(t, raw, system, id); n != 1 {
		t.Errorf("workflow %s recorded %d times, want once", id, n)
	}
}

// A submit whose context has ended does not try again, and says why it
// stopped.
func TestSubmitStopsTryingWithItsContext(t *testing.T) {
	raw, _, system := pgSchemas(t)
	g, gated := newGate(t, raw)
	client, err := dbos.Open(context.Background(), gated, &dbos.Options{Schema: system})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	g.refuse.Store(1 << 30)
	g.drop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = client.Submit(ctx, &durable.SubmitRequest{Queue: "q", Turn: durable.Turn{Session: "s1", Prompt: "one"}})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `submit to queue "q"`) {
		t.Fatalf("submit = %v, want the failure and the cancellation", err)
	}
}

// Submitting a workflow id again is answered with the same workflow: a
// try whose commit was lost is not a second turn.
func TestSubmitOfAKnownIDEnqueuesOnce(t *testing.T) {
	raw, _, system := pgSchemas(t)
	client, err := dbos.Open(context.Background(), raw, &dbos.Options{Schema: system})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	req := &durable.SubmitRequest{ID: "turn-1", Queue: "q", Turn: durable.Turn{Session: "s1", Prompt: "one"}}
	for range 2 {
		id, err := client.Submit(context.Background(), req)
		if err != nil || id != req.ID {
			t.Fatalf("submit = %q, %v; want %q", id, err, req.ID)
		}
	}
	if n := recorded(t, raw, system, req.ID); n != 1 {
		t.Errorf("workflow recorded %d times, want once", n)
	}
}
