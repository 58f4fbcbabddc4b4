package jsonl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
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

// BenchmarkAppend appends one event per call, as the loop does, at each
// durability setting, and reports events/s and bytes on disk per event.
func BenchmarkAppend(b *testing.B) {
	pool := benchEvents(4096)
	for _, d := range []jsonl.Durability{jsonl.DurabilityAlways, jsonl.DurabilityStep, jsonl.DurabilityNever} {
		b.Run(d.String(), func(b *testing.B) {
			ctx := context.Background()
			st, err := jsonl.Open(b.TempDir(), &jsonl.Options{Durability: d})
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
			if fi, err := os.Stat(st.Path(id)); err == nil {
				b.ReportMetric(float64(fi.Size())/float64(b.N), "B/event")
			}
		})
	}
}

const bigSession = 100_000

// BenchmarkOpenRepairDerive opens a 100,000-event session left by a
// crashed process with an open tail turn, reads it (which cuts and
// repairs), and derives the model messages from it.
func BenchmarkOpenRepairDerive(b *testing.B) {
	ctx := context.Background()
	src := b.TempDir()
	st, err := jsonl.Open(src, &jsonl.Options{Durability: jsonl.DurabilityNever})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := st.Create(ctx, &session.CreateRequest{ID: "big"})
	evs := benchEvents(bigSession)
	// End inside a turn: an open step with a call that started.
	l := sessiontest.NewLog(id)
	l.Events = evs
	l.StartTurn("last").OpenStep("working", "open-call").Started("open-call")
	for i := 0; i < len(l.Events); i += 1000 {
		if err := st.Append(ctx, id, l.Events[i:min(i+1000, len(l.Events))]...); err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	data, err := os.ReadFile(filepath.Join(src, "big.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.WriteFile(filepath.Join(dir, "big.jsonl"), data, 0o644)
		os.WriteFile(filepath.Join(dir, "big.lock"), []byte(`{"pid":1,"host":"gone","since":"2026-01-01T00:00:00Z"}`), 0o644)
		b.StartTimer()
		st, err := jsonl.Open(dir, nil)
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
	b.ReportMetric(float64(len(data))/float64(len(l.Events)), "B/event")
}

// BenchmarkEventsTail reads the last few events of a long session, as a
// follower does after each append.
func BenchmarkEventsTail(b *testing.B) {
	ctx := context.Background()
	st, err := jsonl.Open(b.TempDir(), &jsonl.Options{Durability: jsonl.DurabilityNever})
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
			b.Fatal(fmt.Sprint("read ", n))
		}
	}
}
