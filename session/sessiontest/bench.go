package sessiontest

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/cputime"
	"github.com/reinhq/rein/session"
)

// BenchAppend appends one event of a Mix per iteration to a new session
// of st, as the agent loop does, and reports events/s. It returns the
// session, so the caller can report its size on disk.
func BenchAppend(b *testing.B, st session.Store) session.ID {
	b.Helper()
	pool := Mix(4096)
	ctx := context.Background()
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
	return id
}

// BenchEventsTail appends 20,000 events of a Mix to a new session of st
// and reads its last five per iteration, as a follower does after each
// append.
func BenchEventsTail(b *testing.B, st session.Store) {
	b.Helper()
	ctx := context.Background()
	id, err := st.Create(ctx, &session.CreateRequest{ID: "tail"})
	if err != nil {
		b.Fatal(err)
	}
	evs := Mix(20000)
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
			b.Fatalf("read %d events, want 5", n)
		}
	}
}

// FillCrashed creates session id in st and appends n events of a Mix
// followed by a turn left open as a crashed process leaves it: an open
// step whose tool call started. It returns how many events it appended;
// reading the session back from a reopened store adds three repair
// events.
func FillCrashed(tb testing.TB, st session.Store, id session.ID, n int) int {
	tb.Helper()
	ctx := context.Background()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: id}); err != nil {
		tb.Fatal(err)
	}
	l := NewLog(id)
	l.Events = Mix(n)
	l.StartTurn("last").OpenStep("working", "open-call").Started("open-call")
	for i := 0; i < len(l.Events); i += 1000 {
		if err := st.Append(ctx, id, l.Events[i:min(i+1000, len(l.Events))]...); err != nil {
			tb.Fatal(err)
		}
	}
	return len(l.Events)
}

// BenchOpenRepairDerive times reopening a session a crashed process left,
// as FillCrashed makes it with events events: per iteration, restore puts
// the crashed store's files back (untimed), then the store is opened with
// open, the session read, which repairs it, and the model messages
// derived from it. The restored files are flushed to disk before the
// timer starts: a store syncs what it writes, so what a crashed one left
// is on disk already, and the first sync of the repair must not be
// charged with writing back the whole restored file.
func BenchOpenRepairDerive(b *testing.B, id session.ID, events int, restore func(), open func() (session.Store, error)) {
	b.Helper()
	ctx := context.Background()
	var cpu time.Duration // CPU time of the process while timed, with GC
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		restore()
		syscall.Sync()
		runtime.GC()
		c0 := cputime.Process()
		b.StartTimer()
		st, err := open()
		if err != nil {
			b.Fatal(err)
		}
		got, err := ReadAll(ctx, st, id, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != events+3 {
			b.Fatalf("read %d events, want %d and 3 repairs", len(got), events)
		}
		if msgs := session.Derive(got); len(msgs) == 0 {
			b.Fatal("derived nothing")
		}
		st.Close()
		b.StopTimer()
		cpu += cputime.Process() - c0
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchSteps runs BenchStep on a store of open as "Append" and, if it
// is a session.Syncer, as "AppendAsync".
func BenchSteps(b *testing.B, open func(b *testing.B) session.Store) {
	for _, async := range []bool{false, true} {
		name := "Append"
		if async {
			name = "AppendAsync"
		}
		b.Run(name, func(b *testing.B) {
			st := open(b)
			defer st.Close()
			if _, ok := st.(session.Syncer); async && !ok {
				b.Skipf("%T does not implement session.Syncer", st)
			}
			BenchStep(b, st, async)
		})
	}
}

// BenchStep appends one agent step per iteration to a new session of st
// in the agent's three batches: step.start with the assistant message,
// the tool call, then its result with step.end. With async it appends
// with AppendAsync (st must be a session.Syncer) and never waits for the
// syncs, as the loop does between a turn's steps. It reports µs/step.
func BenchStep(b *testing.B, st session.Store, async bool) {
	b.Helper()
	ctx := context.Background()
	id, err := st.Create(ctx, &session.CreateRequest{ID: "steps"})
	if err != nil {
		b.Fatal(err)
	}
	l := NewLog(id).StartTurn("bench")
	head := len(l.Events)
	step := l.Step("working", "c1").Events[head:]
	if err := st.Append(ctx, id, l.Events[:head]...); err != nil {
		b.Fatal(err)
	}
	appendFn := st.Append
	if async {
		appendFn = st.(session.Syncer).AppendAsync
	}
	batches := [][2]int{{0, 2}, {2, 3}, {3, 5}}
	evs := make([]session.Event, len(step))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(evs, step)
		for k := range evs {
			evs[k].Seq = int64(head + i*len(step) + k + 1)
		}
		for _, r := range batches {
			if err := appendFn(ctx, id, evs[r[0]:r[1]]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/step")
}

// BenchNewSession creates a session of st per iteration and appends its
// first turn's opening events, which takes the session's lock: the
// fixed cost a new session adds to its first turn, before any step. It
// reports the process's CPU time per session beside the time on the
// clock.
func BenchNewSession(b *testing.B, st session.Store) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	c0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id, err := st.Create(ctx, &session.CreateRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Append(ctx, id, NewLog(id).StartTurn("bench").Events...); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cputime.Process()-c0).Microseconds())/float64(b.N), "cpu-µs/op")
}
