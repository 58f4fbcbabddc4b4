package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

func open(t *testing.T, path string, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return st
}

func TestConformance(t *testing.T) {
	for _, d := range []sqlite.Durability{sqlite.DurabilityStep, sqlite.DurabilityNever} {
		t.Run(d.String(), func(t *testing.T) {
			sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
				path := filepath.Join(t.TempDir(), "sessions.db")
				opts := &sqlite.Options{Durability: d}
				h := sessiontest.NewHandle(t, func() (session.Store, error) { return sqlite.Open(path, opts) })
				return h, h.Reopen
			})
		})
	}
}
