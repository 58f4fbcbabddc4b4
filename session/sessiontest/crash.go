package sessiontest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

var crashSoak = flag.Int("crash.soak", 0, "kill the appending child process this many times instead of 200")

// CrashID is the session the crash tests and their child processes use.
const CrashID session.ID = "crash"

// scriptTurns is how many turns a child has to append; it is killed long
// before it gets through them.
const scriptTurns = 60

// The environment a child process reads: the mode it runs, where the
// store is, the durability to open it with and, in "append" mode, the
// last seq the parent saw.
const (
	envMode       = "REIN_STORE_CHILD"
	envPath       = "REIN_STORE_PATH"
	envDurability = "REIN_STORE_DURABILITY"
	envStart      = "REIN_STORE_START"
)

// ChildFunc is a child mode of a store's own: it runs in the child
// process with the store opened, and reports to the parent through say,
// one line per call. Returning ends the child; a non-nil error is
// reported as a line "error …".
type ChildFunc func(ctx context.Context, st session.Store, say func(format string, args ...any)) error

// CrashOptions configures RunCrashTests and RunCrashChild; a store's
// tests pass the same value to both.
type CrashOptions struct {
	// Open opens the store at path with the durability d. It is required,
	// and must give a store that holds a session's append lock across
	// processes (session.ErrLocked naming the holder's pid).
	Open func(path string, d session.Durability) (session.Store, error)
	// Path returns a fresh place for a store under t.TempDir(), such as
	// a database file; nil uses the directory t.TempDir() itself.
	Path func(t *testing.T) string
	// Kills is how many times the appending child is killed; zero is
	// 200. The -crash.soak=N flag overrides it.
	Kills int
	// Modes adds child modes, started with StartChild by the store's
	// own tests.
	Modes map[string]ChildFunc
}

func (o *CrashOptions) path(t *testing.T) string {
	if o.Path != nil {
		return o.Path(t)
	}
	return t.TempDir()
}

func (o *CrashOptions) open(t *testing.T, path string) session.Store {
	t.Helper()
	st, err := o.Open(path, session.DurabilityStep)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return st
}

// RunCrashChild is the child process of the crash tests. Call it, with
// the options given to RunCrashTests, from a test named
// TestHelperProcess; in a normal test run it skips.
func RunCrashChild(t *testing.T, opts *CrashOptions) {
	mode := os.Getenv(envMode)
	if mode == "" {
		t.Skip("only runs as a child process")
	}
	if err := child(opts, mode, os.Getenv(envPath)); err != nil {
		fmt.Fprintln(os.Stdout, "error", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func child(opts *CrashOptions, mode, path string) error {
	ctx := context.Background()
	d, _ := strconv.Atoi(os.Getenv(envDurability))
	st, err := opts.Open(path, session.Durability(d))
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	switch mode {
	case "append":
		start, _ := strconv.ParseInt(os.Getenv(envStart), 10, 64)
		info, err := st.Info(ctx, CrashID)
		if err != nil {
			return err
		}
		if info.LastSeq != start {
			return fmt.Errorf("last seq %d, parent said %d", info.LastSeq, start)
		}
		evs := script(start, scriptTurns)
		r := rand.New(rand.NewPCG(uint64(start), 9))
		// A store that can sync in the background appends half its
		// batches so, and syncs at turn ends, as the agent does: an
		// acknowledged AppendAsync must survive the kill as Append does.
		syncer, _ := st.(session.Syncer)
		for i := 0; i < len(evs); {
			j := min(i+1+r.IntN(6), len(evs))
			if err := appendBatch(ctx, st, syncer, r.IntN(2) == 0, evs[i:j]); err != nil {
				return err
			}
			say("ok %d", evs[j-1].Seq)
			i = j
			// A model takes far longer between appends; a short pause
			// keeps each run's log small without changing what is tested.
			time.Sleep(200 * time.Microsecond)
		}
	case "hold":
		evs := NewLog(CrashID).StartTurn("held").OpenStep("working", "c1").Started("c1").Events
		if err := st.Append(ctx, CrashID, evs...); err != nil {
			return err
		}
		say("held %d", os.Getpid())
		time.Sleep(time.Minute) // until killed
	default:
		fn := opts.Modes[mode]
		if fn == nil {
			return fmt.Errorf("unknown child mode %q", mode)
		}
		return fn(ctx, st, say)
	}
	return st.Close()
}

// appendBatch appends evs with AppendAsync if async and the store is a
// Syncer, syncing after a turn.end, else with Append.
func appendBatch(ctx context.Context, st session.Store, syncer session.Syncer, async bool, evs []session.Event) error {
	if syncer == nil || !async {
		return st.Append(ctx, CrashID, evs...)
	}
	if err := syncer.AppendAsync(ctx, CrashID, evs...); err != nil {
		return err
	}
	if _, ok := evs[len(evs)-1].Data.(*session.TurnEnd); ok {
		return syncer.Sync(ctx, CrashID)
	}
	return nil
}

// StartChild starts the test binary's TestHelperProcess as a child in
// mode (one of CrashOptions.Modes) on the store at path, opened with d.
// It returns the process and a channel of the lines the child says,
// closed when its output ends; the caller waits for the process.
func StartChild(t *testing.T, mode, path string, d session.Durability) (*exec.Cmd, <-chan string) {
	t.Helper()
	return startChild(t, mode, path, envDurability+"="+strconv.Itoa(int(d)))
}

func startChild(t *testing.T, mode, path string, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append(env, envMode+"="+mode, envPath+"="+path)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// RunCrashTests checks a durable store against processes that die: a
// child appending from a script is killed with SIGKILL at random points
// (B47_CrashKills), a child holding a session's lock is killed mid-turn
// (B50_LockHeldByAnotherProcess), and two Stores of the test process
// contend for one session (B50_SecondStoreInProcess). The test binary must call
// RunCrashChild from TestHelperProcess with the same opts.
//
// Quick start, in a store's own test:
//
//	var crash = &sessiontest.CrashOptions{
//		Open: func(path string, d session.Durability) (session.Store, error) {
//			return mystore.Open(path, &mystore.Options{Durability: d})
//		},
//	}
//
//	func TestHelperProcess(t *testing.T) { sessiontest.RunCrashChild(t, crash) }
//	func TestCrash(t *testing.T)         { sessiontest.RunCrashTests(t, crash) }
func RunCrashTests(t *testing.T, opts *CrashOptions) {
	t.Run("B47_CrashKills", func(t *testing.T) { testCrashKills(t, opts) })
	t.Run("B50_LockHeldByAnotherProcess", func(t *testing.T) { testLockHeld(t, opts) })
	t.Run("B50_SecondStoreInProcess", func(t *testing.T) { testSecondStore(t, opts) })
}

// script returns the events a child appends to a session whose last seq
// is start: turns of one to three steps with streamed chunks, tool calls
// and results. It is deterministic, so the parent can check what the
// child wrote.
func script(start int64, turns int) []session.Event {
	r := rand.New(rand.NewPCG(uint64(start), 7))
	var evs []session.Event
	add := func(turn string, p session.Payload) {
		seq := start + int64(len(evs)) + 1
		evs = append(evs, session.Event{
			Seq: seq, Time: Base.Add(time.Duration(seq) * time.Millisecond),
			Session: CrashID, Turn: session.TurnID(turn), Run: session.RunID("run-" + strconv.FormatInt(start, 10)), Data: p,
		})
	}
	for n := range turns {
		turn := fmt.Sprintf("t%d-%d", start, n)
		add(turn, &session.TurnStart{Trigger: session.TriggerPrompt})
		add(turn, &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: fmt.Sprintf("prompt %d of run %d", n, start)}}, Source: session.SourceUser})
		steps := 1 + r.IntN(3)
		for s := 1; s <= steps; s++ {
			add(turn, &session.StepStart{Step: s})
			for c := range r.IntN(5) {
				add(turn, &session.AssistantChunk{Step: s, Deltas: []session.ChunkDelta{{Kind: "text", Text: strings.Repeat("x", 1+r.IntN(40)) + strconv.Itoa(c)}}})
			}
			calls := 0
			if s < steps {
				calls = 1 + r.IntN(2)
			}
			parts := []llm.Part{&llm.Text{Text: strings.Repeat("answer ", 1+r.IntN(30))}}
			for c := range calls {
				id := llm.CallID(fmt.Sprintf("%s-s%d-c%d", turn, s, c))
				parts = append(parts, &llm.ToolCall{ID: id, Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)})
			}
			add(turn, &session.AssistantMessage{Parts: parts, Usage: llm.Usage{Input: 100, Output: 20}, Finish: llm.FinishStop})
			for c := range calls {
				id := llm.CallID(fmt.Sprintf("%s-s%d-c%d", turn, s, c))
				add(turn, &session.ToolCall{CallID: id, Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)})
				add(turn, &session.ToolResult{CallID: id, Name: "read", Parts: []llm.Part{&llm.Text{Text: strings.Repeat("line\n", r.IntN(200))}}, Outcome: session.OutcomeExecute})
			}
			add(turn, &session.StepEnd{Step: s, Finish: llm.FinishStop})
		}
		add(turn, &session.TurnEnd{Reason: session.EndCompleted})
	}
	return evs
}

// Mix returns n events of a realistic mix for benchmarks: turns of one
// to three steps with streamed chunks, tool calls and results of various
// sizes, numbered from seq 1 and without a session, ready to append.
func Mix(n int) []session.Event {
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

// testCrashKills appends from a child process, kills it with SIGKILL at
// random points, and checks after every kill that each event whose
// Append returned is there, intact, and that the reopened log is
// balanced (B47, B48).
func testCrashKills(t *testing.T, opts *CrashOptions) {
	if testing.Short() {
		t.Skip("starts hundreds of processes")
	}
	kills := 200
	if opts.Kills > 0 {
		kills = opts.Kills
	}
	if *crashSoak > 0 {
		kills = *crashSoak
	}
	ctx := context.Background()
	path := opts.path(t)
	st := opts.open(t, path)
	if _, err := st.Create(ctx, &session.CreateRequest{ID: CrashID}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := rand.New(rand.NewPCG(1, 2))
	var last int64
	repaired, torn := 0, 0
	for k := range kills {
		d := session.DurabilityNever
		if k%4 == 0 {
			d = session.DurabilityStep
		}
		cmd, lines := startChild(t, "append", path,
			envStart+"="+strconv.FormatInt(last, 10), envDurability+"="+strconv.Itoa(int(d)))
		// Kill after a random number of acknowledged appends (sometimes
		// before the first), then a random extra delay.
		want := r.IntN(12)
		var acked int64 = last
		timeout := time.After(20 * time.Second)
	wait:
		for n := 0; n < want; {
			select {
			case line, ok := <-lines:
				if !ok {
					break wait
				}
				seq, ok := parseOK(line)
				if !ok {
					t.Fatalf("kill %d: child said %q", k, line)
				}
				acked = seq
				n++
			case <-timeout:
				t.Fatalf("kill %d: child too slow", k)
			}
		}
		time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for line := range lines { // acknowledgements that raced the kill count too
			if seq, ok := parseOK(line); ok {
				acked = seq
			}
		}
		cmd.Wait()

		st, err := opts.Open(path, session.DurabilityStep)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", k, err)
		}
		// Everything up to last was checked after the previous kill.
		got, err := ReadAll(ctx, st, CrashID, last)
		if err != nil {
			t.Fatalf("kill %d: read after kill: %v", k, err)
		}
		if n := last + int64(len(got)); n < acked {
			t.Fatalf("kill %d: the log has %d events, but the child's Append returned for seq %d", k, n, acked)
		}
		// What the child wrote is exactly the script, up to the repair.
		wantEv := script(last, scriptTurns)
		written := got
		for i, e := range written {
			if isRepair(e) {
				written = written[:i]
				break
			}
		}
		if diff := DiffEvents(wantEv[:len(written)], written); diff != "" {
			t.Fatalf("kill %d: events differ from what the child appended (-want +got):\n%s", k, diff)
		}
		if len(got) > len(written) {
			repaired++
		}
		if last+int64(len(written)) > acked {
			torn++ // written but not acknowledged: the kill came between write and reply
		}
		// The new part starts at a turn boundary; renumbered from 1 it is
		// a whole log that must be balanced with nothing left to repair.
		tail := make([]session.Event, len(got))
		for i, e := range got {
			e.Seq = int64(i + 1)
			tail[i] = e
		}
		if err := session.Balanced(tail); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		if fix := session.RepairEvents(tail, time.Now()); len(fix) != 0 {
			t.Fatalf("kill %d: %d events left to repair after reopen", k, len(fix))
		}
		last += int64(len(got))
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st = opts.open(t, path)
	defer st.Close()
	all, err := ReadAll(ctx, st, CrashID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Balanced(all); err != nil || int64(len(all)) != last {
		t.Fatalf("whole log: %d events (want %d), %v", len(all), last, err)
	}
	if fix, err := session.RepairLog(ctx, st, CrashID); err != nil || len(fix) != 0 {
		t.Fatalf("RepairLog of the whole log = %d events, %v; want nothing to repair", len(fix), err)
	}
	t.Logf("%d kills: %d events, %d open turns repaired, %d kills between write and acknowledgement", kills, last, repaired, torn)
}

// isRepair reports whether e is one of the events that close a turn
// left open by a crash.
func isRepair(e session.Event) bool {
	switch d := e.Data.(type) {
	case *session.TurnEnd:
		return d.Reason == session.EndInterrupted
	case *session.ToolResult:
		return d.Interrupted
	case *session.StepEnd:
		return d.Finish == llm.FinishAborted
	}
	return false
}

func parseOK(line string) (int64, bool) {
	s, ok := strings.CutPrefix(line, "ok ")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// testLockHeld: a second process cannot append to a session a live
// process appends to, and the error names the holder; once the holder
// dies, the session opens and its open turn is closed (B50, B48).
func testLockHeld(t *testing.T, opts *CrashOptions) {
	ctx := context.Background()
	path := opts.path(t)
	st := opts.open(t, path)
	defer st.Close()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: CrashID}); err != nil {
		t.Fatal(err)
	}
	cmd, lines := startChild(t, "hold", path)
	defer cmd.Process.Kill()
	var line string
	select {
	case line = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatal("child did not take the lock")
	}
	pid, ok := strings.CutPrefix(line, "held ")
	if !ok {
		t.Fatalf("child said %q", line)
	}
	next := NewLog(CrashID).StartTurn("held").OpenStep("working", "c1").Started("c1").StartTurn("mine").Events[5:]
	err := st.Append(ctx, CrashID, next...)
	if !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Append while another process holds the session: err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "pid "+pid) {
		t.Errorf("error %q does not name the holder, pid %s", err, pid)
	}
	if err := st.Delete(ctx, CrashID); !errors.Is(err, session.ErrLocked) {
		t.Errorf("Delete while another process holds the session: err = %v, want ErrLocked", err)
	}
	// Readers need no lock, and see the holder's open turn as it is.
	got, err := ReadAll(ctx, st, CrashID, 0)
	if err != nil || len(got) != 5 {
		t.Fatalf("read while held: %d events, %v; want 5", len(got), err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The holder died mid-turn: opening closes its turn (B48).
	got, err = ReadAll(ctx, st, CrashID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Balanced(got); err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	var codes []string
	for _, e := range got[5:] {
		switch d := e.Data.(type) {
		case *session.ToolResult:
			codes = append(codes, d.Code)
		case *session.TurnEnd:
			codes = append(codes, string(d.Reason))
		default:
			codes = append(codes, e.Data.EventType())
		}
	}
	if want := fmt.Sprint([]string{session.CodeOutcomeUnknown, session.TypeStepEnd, string(session.EndInterrupted)}); fmt.Sprint(codes) != want {
		t.Errorf("repair events = %v, want %v", codes, want)
	}
	l := NewLog(CrashID)
	l.Events = got
	l.StartTurn("mine")
	if err := st.Append(ctx, CrashID, l.Events[len(got):]...); err != nil {
		t.Fatalf("Append after the holder died: %v", err)
	}
}

// testSecondStore: two Stores of one process exclude each other as two
// processes do (B50).
func testSecondStore(t *testing.T, opts *CrashOptions) {
	ctx := context.Background()
	path := opts.path(t)
	a, b := opts.open(t, path), opts.open(t, path)
	defer a.Close()
	defer b.Close()
	if _, err := a.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	l := NewLog("s").FullTurn("one").FullTurn("two")
	if err := a.Append(ctx, "s", l.Events[:3]...); err != nil {
		t.Fatal(err)
	}
	err := b.Append(ctx, "s", l.Events[3:]...)
	if !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Store's Append: err = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	a.Close()
	if err := b.Append(ctx, "s", l.Events[3:]...); err != nil {
		t.Fatalf("Append after the first Store closed: %v", err)
	}
}
