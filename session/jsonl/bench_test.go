package jsonl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
)

// BenchmarkAppend appends one event per call, as the loop does, at each
// durability setting, and reports events/s and bytes on disk per event.
func BenchmarkAppend(b *testing.B) {
	for _, d := range []jsonl.Durability{jsonl.DurabilityAlways, jsonl.DurabilityStep, jsonl.DurabilityNever} {
		b.Run(d.String(), func(b *testing.B) {
			st, err := jsonl.Open(b.TempDir(), &jsonl.Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			id := sessiontest.BenchAppend(b, st)
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
	src := b.TempDir()
	st, err := jsonl.Open(src, &jsonl.Options{Durability: jsonl.DurabilityNever})
	if err != nil {
		b.Fatal(err)
	}
	n := sessiontest.FillCrashed(b, st, "big", bigSession)
	st.Close()
	data, err := os.ReadFile(filepath.Join(src, "big.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	sessiontest.BenchOpenRepairDerive(b, "big", n, func() {
		os.WriteFile(filepath.Join(dir, "big.jsonl"), data, 0o644)
		os.WriteFile(filepath.Join(dir, "big.lock"), []byte(`{"pid":1,"host":"gone","since":"2026-01-01T00:00:00Z"}`), 0o644)
	}, func() (session.Store, error) { return jsonl.Open(dir, nil) })
	b.ReportMetric(float64(len(data))/float64(n), "B/event")
}

// BenchmarkEventsTail reads the last few events of a long session, as a
// follower does after each append.
func BenchmarkEventsTail(b *testing.B) {
	st, err := jsonl.Open(b.TempDir(), &jsonl.Options{Durability: jsonl.DurabilityNever})
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
		st, err := jsonl.Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		return st
	})
}

// BenchmarkNewSession creates a session and takes its lock, at the
// default durability: what a new session costs before its first step.
func BenchmarkNewSession(b *testing.B) {
	st, err := jsonl.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sessiontest.BenchNewSession(b, st)
}
