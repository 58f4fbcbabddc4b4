package sessiontest

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/reinhq/rein/session"
)

// Handle is a session.Store that forwards every call to the store it
// holds, and Reopen swaps in a freshly opened one. Parts of the
// conformance suite keep using the store they were given after calling
// reopen, so a durable store's conformance test gives the suite a
// Handle:
//
//	sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
//		dir := t.TempDir()
//		h := sessiontest.NewHandle(t, func() (session.Store, error) { return mystore.Open(dir, nil) })
//		return h, h.Reopen
//	})
type Handle struct {
	t    *testing.T
	open func() (session.Store, error)

	mu  sync.Mutex
	cur session.Store
}

// NewHandle opens a store with open and returns a Handle on it; it fails
// t if open fails.
func NewHandle(t *testing.T, open func() (session.Store, error)) *Handle {
	t.Helper()
	h := &Handle{t: t, open: open}
	h.cur = h.mustOpen()
	return h
}

func (h *Handle) mustOpen() session.Store {
	h.t.Helper()
	st, err := h.open()
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	return st
}

// Reopen closes the store the Handle holds, opens it again, and returns
// the Handle; it fails the test if opening fails.
func (h *Handle) Reopen() session.Store {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.Close()
	h.cur = h.mustOpen()
	return h
}

// Current returns the store the Handle holds now.
func (h *Handle) Current() session.Store {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// Create implements session.Store.
func (h *Handle) Create(ctx context.Context, req *session.CreateRequest) (session.ID, error) {
	return h.Current().Create(ctx, req)
}

// Append implements session.Store.
func (h *Handle) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	return h.Current().Append(ctx, id, events...)
}

// Events implements session.Store.
func (h *Handle) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return h.Current().Events(ctx, id, afterSeq)
}

// Info implements session.Store.
func (h *Handle) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	return h.Current().Info(ctx, id)
}

// List implements session.Store.
func (h *Handle) List(ctx context.Context) ([]session.Info, error) { return h.Current().List(ctx) }

// SetMeta implements session.Store.
func (h *Handle) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	return h.Current().SetMeta(ctx, id, key, value)
}

// Delete implements session.Store.
func (h *Handle) Delete(ctx context.Context, id session.ID) error {
	return h.Current().Delete(ctx, id)
}

// Close implements session.Store: it closes the store the Handle holds.
func (h *Handle) Close() error { return h.Current().Close() }

// Subscribe implements session.Notifier when the store the Handle holds
// does; otherwise the channel never fires.
func (h *Handle) Subscribe(id session.ID) (<-chan struct{}, func()) {
	if n, ok := h.Current().(session.Notifier); ok {
		return n.Subscribe(id)
	}
	return make(chan struct{}), func() {}
}

var (
	_ session.Store    = (*Handle)(nil)
	_ session.Notifier = (*Handle)(nil)
)
