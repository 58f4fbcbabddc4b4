package mcp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
)

// droppable connects each attempt to srv over a fresh in-memory pipe and
// keeps the server's side of the last one, so a test can drop it.
type droppable struct {
	srv *sdk.Server
	mu  sync.Mutex
	end *serverEnd
}

func (d *droppable) transport(t *testing.T) func(context.Context) (sdk.Transport, error) {
	return func(ctx context.Context) (sdk.Transport, error) {
		ct, end, err := connectInMemory(d.srv)
		if err != nil {
			return nil, err
		}
		t.Cleanup(end.close)
		d.mu.Lock()
		d.end = end
		d.mu.Unlock()
		return ct, nil
	}
}

func (d *droppable) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.end.close()
}

// A connection that drops and comes back offers the roots the host has
// now: those it had, and those set while it was down.
func TestRootsAfterReconnect(t *testing.T) {
	work, _ := mcp.DirRoot(t.TempDir())
	extra, _ := mcp.DirRoot(t.TempDir())
	srv := &droppable{srv: mcptest.NewHostServer(nil)}
	down := make(chan struct{}, 4)
	var conns eventLog[*mcp.Connected]
	m := newManager(t, &mcp.Options{
		Servers: []mcp.ServerConfig{{Name: "host", NewTransport: srv.transport(t)}},
		Roots:   []mcp.Root{work},
		// The background reconnect waits long, so the next call reconnects.
		Backoff: mcp.Backoff{Initial: time.Hour, Max: time.Hour},
		Events: func(ev mcp.Event) {
			conns.add(ev)
			if _, ok := ev.(*mcp.Disconnected); ok {
				down <- struct{}{}
			}
		},
	})
	roots := func() string {
		t.Helper()
		res, err := m.Call(context.Background(), "host", "roots", nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.TextOf()
	}
	dropAndWait := func() {
		t.Helper()
		srv.drop()
		select {
		case <-down:
		case <-time.After(10 * time.Second):
			t.Fatal("the dropped connection was not noticed")
		}
	}
	if got := roots(); got != work.URI {
		t.Fatalf("roots = %q, want %s", got, work.URI)
	}
	dropAndWait()
	if got := roots(); got != work.URI {
		t.Errorf("roots after a reconnect = %q, want %s again", got, work.URI)
	}
	dropAndWait()
	if err := m.SetRoots([]mcp.Root{extra}); err != nil {
		t.Fatal(err)
	}
	if got := roots(); got != extra.URI {
		t.Errorf("roots set while down, after the reconnect = %q, want %s", got, extra.URI)
	}
	var reconnects int
	for _, c := range conns.all() {
		if c.Reconnect {
			reconnects++
		}
	}
	if reconnects != 2 {
		t.Errorf("reconnects = %d, want 2", reconnects)
	}
}
