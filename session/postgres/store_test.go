package postgres_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sessiontest"
)

func open(t testing.TB, url string, opts *postgres.Options) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConformance needs a PostgreSQL server (REIN_TEST_POSTGRES). The
// default durability takes both ways an append commits (waiting for the
// disk at a step's end, not before), so the other settings add nothing.
func TestConformance(t *testing.T) {
	serverURL(t)
	for _, d := range []postgres.Durability{postgres.DurabilityStep} {
		t.Run(d.String(), func(t *testing.T) {
			sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
				opts := &postgres.Options{Durability: d, Schema: testSchema(t)}
				u := serverURL(t)
				h := sessiontest.NewHandle(t, func() (session.Store, error) { return postgres.Open(context.Background(), u, opts) })
				return h, h.Reopen
			})
		})
	}
}
