package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

func TestB49_NewerSchemaUnsupported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st := open(t, path, nil)
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(path, nil)
	if !errors.Is(err, session.ErrUnsupported) || errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("Open of a newer schema: err = %v, want ErrUnsupported and not ErrCorrupt", err)
	}
}

func TestSchemaVersionAndPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st := open(t, path, nil)
	defer st.Close()
	var (
		version int
		mode    string
		strict  int
	)
	db := st.DB()
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != sqlite.SchemaVersion {
		t.Errorf("user_version = %d, %v; want %d", version, err, sqlite.SchemaVersion)
	}
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_list WHERE strict AND name IN ('sessions', 'events', 'locks')`).Scan(&strict); err != nil || strict != 3 {
		t.Errorf("%d strict tables, %v; want 3", strict, err)
	}
}

// TestB48_OpenTurnOfCleanCloseKept: a Store closed cleanly mid-turn leaves
// no lock, so reopening continues the turn rather than repairing it.
func TestB48_OpenTurnOfCleanCloseKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := open(t, path, nil)
	st.Create(ctx, &session.CreateRequest{ID: "s"})
	l := sessiontest.NewLog("s").StartTurn("go").OpenStep("working", "c1")
	if err := st.Append(ctx, "s", l.Events...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = open(t, path, nil)
	defer st.Close()
	n := len(l.Events)
	l.Result("c1", "done").EndStep().EndTurn()
	if err := st.Append(ctx, "s", l.Events[n:]...); err != nil {
		t.Fatalf("continuing the open turn after a clean reopen: %v", err)
	}
	got, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(l.Events, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
