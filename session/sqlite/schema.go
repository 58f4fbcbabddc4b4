package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

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
	// 2: an event's key is one integer, its session's number above the
	// low 32 bits and its seq in them. A session's events are still one
	// range of the key, in order, and the newest session's events go at
	// the end of the table's B-tree, where SQLite starts a new leaf when
	// the last is full; in an index B-tree (a WITHOUT ROWID table is one)
	// it shares out the last three leaves instead, so that an append
	// often wrote four pages rather than one. The old tables are renamed
	// first, which points the other tables' references at them, and
	// dropped last.
	`
ALTER TABLE sessions RENAME TO sessions_1;
ALTER TABLE events RENAME TO events_1;
ALTER TABLE locks RENAME TO locks_1;
DROP INDEX events_turns;

CREATE TABLE sessions (
	num      INTEGER PRIMARY KEY CHECK (num BETWEEN 1 AND 2147483647), -- the high bits of its events' keys
	id       TEXT NOT NULL UNIQUE,
	created  INTEGER NOT NULL, -- unix nanoseconds
	updated  INTEGER NOT NULL, -- time of the last event, unix nanoseconds
	last_seq INTEGER NOT NULL DEFAULT 0,
	workdir  TEXT NOT NULL DEFAULT '',
	parent   TEXT NOT NULL DEFAULT '',
	meta     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(meta))
) STRICT;

CREATE TABLE events (
	key        INTEGER PRIMARY KEY, -- the session's num << 32 | seq
	seq        INTEGER NOT NULL AS (key & 0xFFFFFFFF) VIRTUAL,
	time       INTEGER NOT NULL, -- unix nanoseconds
	type       TEXT NOT NULL,
	turn       TEXT NOT NULL DEFAULT '',
	run        TEXT NOT NULL DEFAULT '',
	parent_run TEXT NOT NULL DEFAULT '',
	agent      TEXT NOT NULL DEFAULT '',
	data       BLOB NOT NULL -- the event's "data" JSON
) STRICT;

-- Turn boundaries, to find a turn left open without reading the log.
CREATE INDEX events_turns ON events (key, type, run, parent_run)
	WHERE type IN ('turn.start', 'turn.end');

CREATE TABLE locks (
	session TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	owner   TEXT NOT NULL,    -- random token of the holding Store
	pid     INTEGER NOT NULL,
	host    TEXT NOT NULL,
	started INTEGER NOT NULL, -- the holder's process start time, 0 if unknown
	since   INTEGER NOT NULL  -- unix nanoseconds
) STRICT, WITHOUT ROWID; -- one B-tree, not a table and the index of its key

INSERT INTO sessions (id, created, updated, last_seq, workdir, parent, meta)
	SELECT id, created, updated, last_seq, workdir, parent, meta FROM sessions_1 ORDER BY created, id;
INSERT INTO events (key, time, type, turn, run, parent_run, agent, data)
	SELECT sessions.num << 32 | e.seq, e.time, e.type, e.turn, e.run, e.parent_run, e.agent, e.data
	FROM events_1 AS e JOIN sessions ON sessions.id = e.session ORDER BY sessions.num, e.seq;
INSERT INTO locks SELECT * FROM locks_1;

DROP TABLE locks_1;
DROP TABLE events_1;
DROP TABLE sessions_1;
`,
}

// SchemaVersion is the database schema version this package writes.
const SchemaVersion = 2

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
	if sqliteCode(err)&0xff == sqlite3.SQLITE_BUSY {
		return fmt.Errorf("sqlite: open %s: another process kept the database's write lock past the busy timeout, "+
			"perhaps migrating it to schema version %d, which takes a few seconds a million events; try again once it is done: %w",
			path, len(migrations), err)
	}
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
	// A migration that rewrote the tables left a write-ahead log as large
	// as them, which SQLite would keep at that size and reuse: copy it
	// into the database and cut it back now. If a reader of another
	// process stops the checkpoint from finishing, the log stays as it is.
	conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return nil
}
