package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/session"
)

// migrations[i] moves a schema from version i to i+1. The version lives
// in the schema_version table; a schema newer than len(migrations) is
// refused as unsupported.
var migrations = []string{
	// 1: sessions, their events, and the leases of the Stores appending.
	`
CREATE TABLE sessions (
	id       text PRIMARY KEY,
	created  bigint NOT NULL, -- unix nanoseconds
	updated  bigint NOT NULL, -- time of the last event, unix nanoseconds
	last_seq bigint NOT NULL DEFAULT 0,
	workdir  text NOT NULL DEFAULT '',
	parent   text NOT NULL DEFAULT '',
	meta     jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE events (
	session    text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq        bigint NOT NULL,
	time       bigint NOT NULL, -- unix nanoseconds
	type       text NOT NULL,
	turn       text NOT NULL DEFAULT '',
	run        text NOT NULL DEFAULT '',
	parent_run text NOT NULL DEFAULT '',
	agent      text NOT NULL DEFAULT '',
	event      json NOT NULL, -- the whole event, as session.Event.MarshalJSON writes it
	PRIMARY KEY (session, seq)
);

-- Turn boundaries, to find a turn left open without reading the log.
CREATE INDEX events_turns ON events (session, seq) INCLUDE (type, run, parent_run)
	WHERE type IN ('turn.start', 'turn.end');

CREATE TABLE leases (
	session       text PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	owner         text NOT NULL,        -- random token of the holding Store
	pid           integer NOT NULL,     -- the holder's process
	host          text NOT NULL,
	space         text NOT NULL,        -- the holder's pid space (boot and pid namespace), '' if unknown
	started       bigint NOT NULL,      -- the holder's process start time, 0 if unknown
	backend       integer NOT NULL,     -- the server process of the holder's own connection
	backend_start timestamptz,          -- and when it started
	since         timestamptz NOT NULL,
	expires       timestamptz NOT NULL  -- renewed while the holder runs
);
CREATE INDEX leases_owner ON leases (owner);
`,
}

// SchemaVersion is the version of the tables this package writes.
const SchemaVersion = 1

// migrate creates schema if it is missing and brings its tables up to
// SchemaVersion, one migrator at a time.
func migrate(ctx context.Context, conn *pgx.Conn, schema string) error {
	// The common case, tables up to date, in one round trip; a missing
	// schema or table takes the slow path.
	var v int
	if err := conn.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v); err == nil && v == len(migrations) {
		return nil
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: open: look for schema %q: %w", schema, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: open: migrate: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('rein schema ' || $1, 0))`, schema); err != nil {
		return fmt.Errorf("postgres: open: migrate: %w", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: open: create schema %q (create it, or grant CREATE on the database): %w", schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`); err != nil {
		return fmt.Errorf("postgres: open: migrate schema %q: %w", schema, err)
	}
	v = 0
	err = tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version VALUES (0)`); err != nil {
			return fmt.Errorf("postgres: open: migrate schema %q: %w", schema, err)
		}
	case err != nil:
		return fmt.Errorf("postgres: open: read the version of schema %q: %w", schema, err)
	}
	if v > len(migrations) {
		return fmt.Errorf("postgres: open: schema %q is at version %d, newer than this rein's %d; upgrade rein: %w",
			schema, v, len(migrations), session.ErrUnsupported)
	}
	if v == len(migrations) {
		return nil
	}
	for ; v < len(migrations); v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("postgres: open: migrate schema %q to version %d: %w", schema, v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE schema_version SET version = $1`, v); err != nil {
		return fmt.Errorf("postgres: open: migrate schema %q: %w", schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: open: migrate schema %q: %w", schema, err)
	}
	return nil
}
