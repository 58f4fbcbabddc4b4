package jsonl_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
)

func open(t *testing.T, dir string, opts *jsonl.Options) *jsonl.Store {
	t.Helper()
	st, err := jsonl.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return st
}

// handle is a Store that reopen swaps under its users: parts of the
// conformance suite keep using the store they were given after calling
// reopen, which closes it, so they are given a handle that always points
// at the current store.
type handle struct {
	mu  sync.Mutex
	cur *jsonl.Store
}

func (h *handle) get() *jsonl.Store { h.mu.Lock(); defer h.mu.Unlock(); return h.cur }

func (h *handle) Create(ctx context.Context, req *session.CreateRequest) (session.ID, error) {
	return h.get().Create(ctx, req)
}
func (h *handle) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	return h.get().Append(ctx, id, events...)
}
func (h *handle) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return h.get().Events(ctx, id, afterSeq)
}
func (h *handle) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	return h.get().Info(ctx, id)
}
func (h *handle) List(ctx context.Context) ([]session.Info, error) { return h.get().List(ctx) }
func (h *handle) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	return h.get().SetMeta(ctx, id, key, value)
}
func (h *handle) Delete(ctx context.Context, id session.ID) error { return h.get().Delete(ctx, id) }
func (h *handle) Close() error                                    { return h.get().Close() }
func (h *handle) Subscribe(id session.ID) (<-chan struct{}, func()) {
	return h.get().Subscribe(id)
}

func TestConformance(t *testing.T) {
	for _, d := range []jsonl.Durability{jsonl.DurabilityStep, jsonl.DurabilityNever} {
		t.Run(d.String(), func(t *testing.T) {
			sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
				dir := t.TempDir()
				opts := &jsonl.Options{Durability: d}
				h := &handle{cur: open(t, dir, opts)}
				return h, func() session.Store {
					h.mu.Lock()
					defer h.mu.Unlock()
					h.cur.Close()
					h.cur = open(t, dir, opts)
					return h
				}
			})
		})
	}
}

// TestB50_SecondStoreInProcess: two Stores of one process exclude each
// other as two processes do.
func TestB50_SecondStoreInProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir, nil), open(t, dir, nil)
	defer a.Close()
	defer b.Close()
	if _, err := a.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	l := sessiontest.NewLog("s").FullTurn("one").FullTurn("two")
	if err := a.Append(ctx, "s", l.Events[:3]...); err != nil {
		t.Fatal(err)
	}
	err := b.Append(ctx, "s", l.Events[3:]...)
	if !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Store's Append: err = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	a.Close()
	if err := b.Append(ctx, "s", l.Events[3:]...); err != nil {
		t.Fatalf("Append after the first Store closed: %v", err)
	}
}
