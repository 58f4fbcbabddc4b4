package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresStore returns a --store URL with the given scheme on the test
// server (REIN_TEST_POSTGRES; the test skips without one) and a schema of
// t's own, dropped when t ends.
func postgresStore(t *testing.T, scheme string) string {
	t.Helper()
	base := os.Getenv("REIN_TEST_POSTGRES")
	if base == "" {
		t.Skip("needs a PostgreSQL server: set REIN_TEST_POSTGRES=postgres://… (.ci/run starts one)")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("REIN_TEST_POSTGRES: %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "cli_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery, u.Scheme = q.Encode(), scheme
	return u.String()
}

// TestStorePostgres runs, follows from another process, lists and shows
// sessions kept in PostgreSQL, named by either URL scheme.
func TestStorePostgres(t *testing.T) {
	if os.Getenv("REIN_TEST_POSTGRES") == "" {
		t.Skip("needs a PostgreSQL server: set REIN_TEST_POSTGRES=postgres://… (.ci/run starts one)")
	}
	for _, scheme := range []string{"postgres", "postgresql"} {
		t.Run(scheme, func(t *testing.T) {
			e := newEnv(t)
			e.store = postgresStore(t, scheme)
			checkTailFollow(t, e)
			if r := e.run(nil, "sessions", "list", "--store", e.store); r.code != 0 || !strings.Contains(r.stdout, "tf") {
				t.Fatalf("sessions list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := e.run(nil, "sessions", "show", "--store", e.store, "tf"); !strings.Contains(r.stdout, "two") || !strings.Contains(r.stdout, "second") {
				t.Errorf("sessions show:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestStorePostgresErrors: a URL that does not parse is a usage error,
// a server that does not answer a plain error, and neither shows the
// password.
func TestStorePostgresErrors(t *testing.T) {
	e := newEnv(t)
	r := e.run(nil, "sessions", "list", "--store", "postgres://rein:hunter2@localhost:notaport/db")
	if r.code != 2 || !strings.Contains(r.stderr, "postgres://USER:PASSWORD@HOST:PORT/DATABASE") {
		t.Errorf("bad URL: exit %d, want 2 and the URL's form\n%s", r.code, r.stderr)
	}
	r2 := e.run(nil, "sessions", "list", "--store", "postgresql://rein:hunter2@127.0.0.1:1/db?password=hunter2&connect_timeout=5")
	if r2.code != 1 || !strings.Contains(r2.stderr, "127.0.0.1:1") {
		t.Errorf("no server: exit %d, want 1 and the server named\n%s", r2.code, r2.stderr)
	}
	for _, r := range []result{r, r2} {
		if strings.Contains(r.stdout+r.stderr, "hunter2") {
			t.Errorf("the password leaked:\n%s", r.stderr)
		}
	}
}

// TestStoreShown: messages show a database URL without its password, and
// other specs as given.
func TestStoreShown(t *testing.T) {
	for spec, want := range map[string]string{
		"postgres://rein:hunter2@db:5432/app":              "postgres://rein:xxxxx@db:5432/app",
		"postgresql://db/app?password=hunter2&sslmode=off": "postgresql://db/app?password=xxxxx&sslmode=off",
		"postgres://rein:hunter2@db:port/app":              "postgres://…",
		"sqlite:/tmp/a%zz.db":                              "sqlite:/tmp/a%zz.db",
		"jsonl:DIR":                                        "jsonl:DIR",
	} {
		a := &app{storeSpec: spec, getenv: func(string) string { return "" }}
		if got := a.storeShown(); got != want {
			t.Errorf("storeShown(%q) = %q, want %q", spec, got, want)
		}
	}
}
