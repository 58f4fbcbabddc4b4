package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
)

// openPostgres opens the PostgreSQL store at spec, a postgres:// or
// postgresql:// URL. The URL may hold a password: messages show it
// redacted.
func openPostgres(spec string) (session.Store, error) {
	if _, err := pgconn.ParseConfig(spec); err != nil {
		return nil, usageErrorf("--store %s: not a PostgreSQL URL; use postgres://USER:PASSWORD@HOST:PORT/DATABASE", redactURL(spec))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, spec, nil)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", redactURL(spec), err)
	}
	return st, nil
}

// redactURL returns a database URL with its password, in the user part
// or the query, replaced by xxxxx.
func redactURL(spec string) string {
	u, err := url.Parse(spec)
	if err != nil {
		return "postgres://…"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// storeShown is the store spec as messages show it: a database URL's
// password redacted.
func (a *app) storeShown() string {
	spec := a.storeSpecValue()
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		return redactURL(spec)
	}
	return spec
}
