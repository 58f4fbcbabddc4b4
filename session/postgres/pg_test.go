package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// envURL names the server the tests use; .ci/run starts one and sets it.
const envURL = "REIN_TEST_POSTGRES"

// serverURL returns the test server's URL, or skips t if there is none.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envURL)
	if u == "" {
		t.Skipf("needs a PostgreSQL server: set %s=postgres://… (.ci/run starts one)", envURL)
	}
	return u
}

// testSchema returns a new schema name for t alone, dropped when t ends,
// so tests running in parallel never see each other's tables.
func testSchema(t testing.TB) string {
	t.Helper()
	u := serverURL(t)
	var b [6]byte
	rand.Read(b[:])
	name := "test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// schemaURL is the server's URL with search_path set to a new schema of t.
func schemaURL(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(serverURL(t))
	if err != nil {
		t.Fatalf("%s: %v", envURL, err)
	}
	q := u.Query()
	q.Set("search_path", testSchema(t))
	u.RawQuery = q.Encode()
	return u.String()
}
