package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

// dbSize is the bytes of the database at path and its write-ahead log.
func dbSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// BenchmarkAppend appends one event per call, as the loop does, at each
// durability setting, and reports events/s.
func BenchmarkAppend(b *testing.B) {
	for _, d := range []sqlite.Durability{sqlite.DurabilityAlways, sqlite.DurabilityStep, sqlite.DurabilityNever} {
		b.Run(d.String(), func(b *testing.B) {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), &sqlite.Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			sessiontest.BenchAppend(b, st)
		})
	}
}

const bigSession = 100_000

// BenchmarkOpenRepairDerive opens a database holding a 100,000-event
// session left by a crashed process with an open tail turn, reads it
// (which repairs it) and derives the model messages from it. It reports
// the database's bytes per event.
func BenchmarkOpenRepairDerive(b *testing.B) {
	src := filepath.Join(b.TempDir(), "s.db")
	st, err := sqlite.Open(src, &sqlite.Options{Durability: sqlite.DurabilityNever})
	if err != nil {
		b.Fatal(err)
	}
	n := sessiontest.FillCrashed(b, st, "big", bigSession)
	st.Close()
	// Leave the lock of a process that is gone, as a crash does.
	host, _ := os.Hostname()
	db, err := sql.Open("sqlite", src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO locks (session, owner, pid, host, started, since) VALUES ('big', 'dead', 4194000, ?, 1, 0)`, host); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`VACUUM`); err != nil {
		b.Fatal(err)
	}
	db.Close()
	perEvent := float64(dbSize(src)) / float64(n)
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "s.db")
	sessiontest.BenchOpenRepairDerive(b, "big", n, func() {
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
		os.WriteFile(path, data, 0o644)
	}, func() (session.Store, error) { return sqlite.Open(path, nil) })
	b.ReportMetric(perEvent, "B/event")
}

// BenchmarkEventsTail reads the last few events of a long session, as a
// follower does after each append.
func BenchmarkEventsTail(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), &sqlite.Options{Durability: sqlite.DurabilityNever})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sessiontest.BenchEventsTail(b, st)
}

// BenchmarkStep appends one agent step per iteration (three batches, the
// last ending the step) at the default durability: with Append, which
// syncs the step's end before it returns, and with AppendAsync, which
// leaves the sync to the background.
func BenchmarkStep(b *testing.B) {
	sessiontest.BenchSteps(b, func(b *testing.B) session.Store {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		return st
	})
}

// BenchmarkNewSession creates a session and takes its lock, at the
// default durability: what a new session costs before its first step.
func BenchmarkNewSession(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sessiontest.BenchNewSession(b, st)
}
