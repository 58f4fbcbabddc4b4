package sqlite

import (
	"context"
	"database/sql"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// A database of schema version 1 (events keyed by session and seq in a
// WITHOUT ROWID table) opens migrated: every session keeps its row, its
// events and its lock, a session's events take keys of its own number,
// and a lock its crashed holder left is still repaired.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	db := version1(t, path)
	// "a" has a finished turn; "b", made later, a turn its process left
	// open when it died.
	la := sessiontest.NewLog("a").StartTurn("go").OpenStep("working", "c1").Result("c1", "ok").EndStep().EndTurn()
	done := slices.Clone(la.Events)
	open := sessiontest.NewLog("b").StartTurn("go").OpenStep("working", "c1").Events
	for i, s := range []struct {
		id     session.ID
		events []session.Event
	}{{"a", done}, {"b", open}} {
		last := s.events[len(s.events)-1]
		if _, err := db.Exec(`INSERT INTO sessions (id, created, updated, last_seq, workdir, parent, meta) VALUES (?, ?, ?, ?, '/w', '', '{"k":"v"}')`,
			string(s.id), int64(i+1), last.Time.UnixNano(), last.Seq); err != nil {
			t.Fatal(err)
		}
		for _, e := range s.events {
			data, err := session.AppendPayloadJSON(nil, e.Data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO events (session, seq, time, type, turn, run, parent_run, agent, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				string(s.id), e.Seq, e.Time.UnixNano(), e.Data.EventType(), string(e.Turn), string(e.Run), string(e.ParentRun), e.Agent, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	host, _ := os.Hostname()
	if _, err := db.Exec(`INSERT INTO locks (session, owner, pid, host, started, since) VALUES ('b', 'dead', 4194000, ?, 1, 0)`, host); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open of a version 1 database: %v", err)
	}
	defer st.Close()
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("the write-ahead log after the migration holds %d bytes, want it cut back", fi.Size())
	}
	var version int
	if err := st.DB().QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", version, err, SchemaVersion)
	}
	infos, err := st.List(ctx)
	if err != nil || len(infos) != 2 || infos[0].ID != "a" || infos[1].ID != "b" {
		t.Fatalf("List = %+v, %v; want a, then b", infos, err)
	}
	if a := infos[0]; a.LastSeq != done[len(done)-1].Seq || a.WorkDir != "/w" || a.Meta["k"] != "v" {
		t.Errorf("Info(a) = %+v, want its row as it was", a)
	}
	got, err := sessiontest.ReadAll(ctx, st, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(done, got); diff != "" {
		t.Errorf("events of a (-want +got):\n%s", diff)
	}
	var keys, lo, hi int64
	if err := st.DB().QueryRow(`SELECT count(*), min(key), max(key) FROM events WHERE key >> 32 = (SELECT num FROM sessions WHERE id = 'a')`).Scan(&keys, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if keys != int64(len(done)) || lo&maxSeq != 1 || hi&maxSeq != int64(len(done)) {
		t.Errorf("a's keys: %d from %#x to %#x, want %d, seqs 1 to %d under its number", keys, lo, hi, len(done), len(done))
	}
	got, err = sessiontest.ReadAll(ctx, st, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) <= len(open) || got[len(got)-1].Data.EventType() != session.TypeTurnEnd {
		t.Errorf("b after its migrated stale lock: %d events ending %s, want its open turn closed by a repair", len(got), got[len(got)-1].Data.EventType())
	}
	la.StartTurn("again").EndTurn()
	if err := st.Append(ctx, "a", la.Events[len(done):]...); err != nil {
		t.Fatalf("appending to a migrated session: %v", err)
	}
}

// A session's reads and its appends stay within its own keys, whatever
// seq they are given.
func TestSessionsKeepToTheirKeys(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "t"}); err != nil {
		t.Fatal(err)
	}
	ls := sessiontest.NewLog("s").StartTurn("one").EndTurn()
	lt := sessiontest.NewLog("t").StartTurn("two").EndTurn()
	if err := st.Append(ctx, "s", ls.Events...); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "t", lt.Events...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    session.ID
		after int64
		want  []session.Event
	}{
		{"t", -1, lt.Events},
		{"t", math.MinInt64, lt.Events},
		{"s", 0, ls.Events},
		{"s", maxSeq, nil},
		{"s", math.MaxInt64, nil},
	} {
		got, err := sessiontest.ReadAll(ctx, st, c.id, c.after)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sessiontest.DiffEvents(c.want, got); diff != "" {
			t.Errorf("Events(%s, %d) (-want +got):\n%s", c.id, c.after, diff)
		}
	}

	// A session holds seqs up to maxSeq: an append past it is refused,
	// one up to it kept.
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "u"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(`UPDATE sessions SET last_seq = ? WHERE id = 'u'`, maxSeq-1); err != nil {
		t.Fatal(err)
	}
	full := sessiontest.NewLog("u").StartTurn("full").Events
	for i := range full {
		full[i].Seq = maxSeq + int64(i)
	}
	err := st.Append(ctx, "u", full...)
	if err == nil || !strings.Contains(err.Error(), "start a new session") {
		t.Fatalf("appending past seq %d: %v, want an error saying to start a new session", int64(maxSeq), err)
	}
	if err := st.Append(ctx, "u", full[0]); err != nil {
		t.Fatalf("appending seq %d: %v", int64(maxSeq), err)
	}
	if got, err := sessiontest.ReadAll(ctx, st, "u", 0); err != nil || len(got) != 1 || got[0].Seq != maxSeq {
		t.Errorf("u holds %v, %v; want its one event at seq %d", seqsOf(got), err, int64(maxSeq))
	}
	if got, err := sessiontest.ReadAll(ctx, st, "t", 0); err != nil || len(got) != len(lt.Events) {
		t.Errorf("the session before u: %d events, %v; want its own %d", len(got), err, len(lt.Events))
	}

	// A deleted session's number may be taken again, but none of its
	// events stay for the next session that takes it.
	num := numOf(t, st, "u")
	if err := st.Delete(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "v"}); err != nil {
		t.Fatal(err)
	}
	if numOf(t, st, "v") != num {
		t.Fatalf("v is numbered %d, not the deleted u's %d: the test shows nothing", numOf(t, st, "v"), num)
	}
	if got, err := sessiontest.ReadAll(ctx, st, "v", 0); err != nil || len(got) != 0 {
		t.Errorf("a new session under a deleted one's number: %d events, %v; want none", len(got), err)
	}
}

// version1 makes a database of schema version 1 at path, with no rows,
// in WAL mode as the Store left it, and returns it open.
func version1(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`PRAGMA journal_mode = WAL;` + migrations[0] + `PRAGMA user_version = 1;`); err != nil {
		t.Fatal(err)
	}
	return db
}

// An Open that cannot migrate because another process keeps the write
// lock says to try again, and the database stays as it was; the next
// Open migrates it.
func TestMigrationWaitingForTheWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := version1(t, path)
	other, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, &Options{BusyTimeout: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "try again once it is done") {
		t.Fatalf("Open while another process holds the write lock: %v, want an error saying to try again", err)
	}
	if _, err := other.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	other.Close()
	st, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open once the lock is free: %v", err)
	}
	defer st.Close()
	var version int
	if err := st.DB().QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion {
		t.Errorf("user_version = %d, %v; want %d", version, err, SchemaVersion)
	}
}
