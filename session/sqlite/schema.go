package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/reinhq/rein/session"
)

// migrations[i] moves a database from schema version i to i+1. The
// version lives in PRAGMA user_version; a database newer than
// len(migrations) is refused as unsupported.
var migrations = []string{
	// 1: sessions, their events, and the append locks of live processes.
	`
CREATE TABLE sessions (
	id       TEXT PRIMARY KEY,
	created  INTEGER NOT NULL, -- unix nanoseconds
	updated  INTEGER NOT NULL, -- time of the last event, unix nanoseconds
	last_seq INTEGER NOT NULL DEFAULT 0,
	workdir  TEXT NOT NULL DEFAULT '',
	parent   TEXT NOT NULL DEFAULT '',
	meta     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(meta))
) STRICT;

CREATE TABLE events (
	session    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	time       INTEGER NOT NULL, -- unix nanoseconds
	type       TEXT NOT NULL,
	turn       TEXT NOT NULL DEFAULT '',
	run        TEXT NOT NULL DEFAULT '',
	parent_run TEXT NOT NULL DEFAULT '',
	agent      TEXT NOT NULL DEFAULT '',
	data       BLOB NOT NULL, -- the event's "data" JSON
	PRIMARY KEY (session, seq)
) STRICT, WITHOUT ROWID;

-- Turn boundaries, to find a turn left open without reading the log.
CREATE INDEX events_turns ON events (session, seq, type, run, parent_run)
	WHERE type IN ('turn.start', 'turn.end');

CREATE TABLE locks (
	session TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	owner   TEXT NOT NULL,    -- random token of the holding Store
	pid     INTEGER NOT NULL,
	host    TEXT NOT NULL,
	started INTEGER NOT NULL, -- the holder's process start time, 0 if unknown
	since   INTEGER NOT NULL  -- unix nanoseconds
) STRICT;
`,
}

// SchemaVersion is the database schema version this package writes.
const SchemaVersion = 1

// migrate brings db's schema up to SchemaVersion.
func migrate(ctx context.Context, conn *sql.Conn, path string) error {
	var v int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("sqlite: open %s: read schema version: %w", path, err)
	}
	if v > len(migrations) {
		return fmt.Errorf("sqlite: open %s: schema version %d is newer than this rein's %d; upgrade rein: %w",
			path, v, len(migrations), session.ErrUnsupported)
	}
	if v == len(migrations) {
		return nil
	}
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return fmt.Errorf("sqlite: open %s: migrate: %w", path, err)
	}
	defer tx.Rollback()
	// Another process may have migrated while this one waited.
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("sqlite: open %s: read schema version: %w", path, err)
	}
	if v > len(migrations) {
		return fmt.Errorf("sqlite: open %s: schema version %d is newer than this rein's %d; upgrade rein: %w",
			path, v, len(migrations), session.ErrUnsupported)
	}
	for ; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("sqlite: open %s: migrate to schema version %d: %w", path, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		return fmt.Errorf("sqlite: open %s: migrate: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: open %s: migrate: %w", path, err)
	}
	return nil
}
