package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sessiontest"
)

// crash opens stores for the crash tests and their child processes: the
// "path" is the server's URL with the test's own schema as search_path.
// A child's lease TTL is $REIN_TEST_LEASE_TTL, if set.
var crash = &sessiontest.CrashOptions{
	Open: func(url string, d session.Durability) (session.Store, error) {
		ttl, _ := time.ParseDuration(os.Getenv(envLeaseTTL))
		return postgres.Open(context.Background(), url, &postgres.Options{Durability: d, LeaseTTL: ttl})
	},
	Path: func(t *testing.T) string { return schemaURL(t) },
}

const envLeaseTTL = "REIN_TEST_LEASE_TTL"

// TestHelperProcess is the child the crash tests start; it does nothing
// in a normal test run.
func TestHelperProcess(t *testing.T) { sessiontest.RunCrashChild(t, crash) }

// TestCrash kills appending and lease-holding child processes with
// SIGKILL and checks that the schema loses no acknowledged event, keeps
// no torn one, and is balanced after repair (B47, B48, B50). It needs a
// PostgreSQL server (REIN_TEST_POSTGRES).
func TestCrash(t *testing.T) {
	serverURL(t)
	sessiontest.RunCrashTests(t, crash)
}
