package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

// benchEvents is a realistic mix: turns of one to three steps with
// streamed chunks, tool calls and results of various sizes.
func benchEvents(n int) []session.Event {
	var evs []session.Event
	for len(evs) < n {
		evs = append(evs, script(int64(len(evs)), 20)...)
	}
	evs = evs[:n]
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		evs[i].Session = ""
	}
	return evs
}

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
// durability setting, and reports events/s and bytes on disk per event.
func BenchmarkAppend(b *testing.B) {
	pool := benchEvents(4096)
	for _, d := range []sqlite.Durability{sqlite.DurabilityAlways, sqlite.DurabilityStep, sqlite.DurabilityNever} {
		b.Run(d.String(), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "s.db")
			st, err := sqlite.Open(path, &sqlite.Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			id, err := st.Create(ctx, &session.CreateRequest{ID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e := pool[i%len(pool)]
				e.Seq = int64(i + 1)
				if err := st.Append(ctx, id, e); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

const bigSession = 100_000

// BenchmarkOpenRepairDerive opens a database holding a 100,000-event
// session left by a crashed process with an open tail turn, reads it
// (which repairs it) and derives the model messages from it. It reports
// the database's bytes per event.
func BenchmarkOpenRepairDerive(b *testing.B) {
	ctx := context.Background()
	src := filepath.Join(b.TempDir(), "s.db")
	st, err := sqlite.Open(src, &sqlite.Options{Durability: sqlite.DurabilityNever})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := st.Create(ctx, &session.CreateRequest{ID: "big"})
	l := sessiontest.NewLog(id)
	l.Events = benchEvents(bigSession)
	l.StartTurn("last").OpenStep("working", "open-call").Started("open-call")
	for i := 0; i < len(l.Events); i += 1000 {
		if err := st.Append(ctx, id, l.Events[i:min(i+1000, len(l.Events))]...); err != nil {
			b.Fatal(err)
		}
	}
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
	perEvent := float64(dbSize(src)) / float64(len(l.Events))
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(dir, "s.db")
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
		os.WriteFile(path, data, 0o644)
		b.StartTimer()
		st, err := sqlite.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		got, err := sessiontest.ReadAll(ctx, st, id, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != len(l.Events)+3 {
			b.Fatalf("read %d events, want %d and 3 repairs", len(got), len(l.Events))
		}
		if msgs := session.Derive(got); len(msgs) == 0 {
			b.Fatal("derived nothing")
		}
		st.Close()
	}
	b.ReportMetric(perEvent, "B/event")
}

// BenchmarkEventsTail reads the last few events of a long session, as a
// follower does after each append.
func BenchmarkEventsTail(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), &sqlite.Options{Durability: sqlite.DurabilityNever})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	id, _ := st.Create(ctx, &session.CreateRequest{ID: "tail"})
	evs := benchEvents(20000)
	if err := st.Append(ctx, id, evs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for _, err := range st.Events(ctx, id, int64(len(evs)-5)) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 5 {
			b.Fatalf("read %d", n)
		}
	}
}
