package jsonl_test

import (
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

func TestConformance(t *testing.T) {
	for _, d := range []jsonl.Durability{jsonl.DurabilityStep, jsonl.DurabilityNever} {
		t.Run(d.String(), func(t *testing.T) {
			sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
				path := t.TempDir()
				opts := &jsonl.Options{Durability: d}
				h := sessiontest.NewHandle(t, func() (session.Store, error) { return jsonl.Open(path, opts) })
				return h, h.Reopen
			})
		})
	}
}
