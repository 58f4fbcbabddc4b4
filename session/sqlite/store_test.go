package sqlite_test

import (
	"context"
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

// openSession opens a store in a new directory, closed when the test
// ends, and creates session id in it.
func openSession(t *testing.T, id session.ID) (*sqlite.Store, session.ID) {
	t.Helper()
	return openSessionAt(t, filepath.Join(t.TempDir(), "s.db"), id)
}

// openSessionAt is openSession with the store's file at path, for tests
// that reopen it.
func openSessionAt(t *testing.T, path string, id session.ID) (*sqlite.Store, session.ID) {
	t.Helper()
	st := open(t, path, nil)
	t.Cleanup(func() { st.Close() })
	id, err := st.Create(context.Background(), &session.CreateRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return st, id
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
