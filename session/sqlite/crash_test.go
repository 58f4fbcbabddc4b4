package sqlite_test

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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

var crashSoak = flag.Int("crash.soak", 0, "kill the appending child process this many times instead of 200")

const crashID session.ID = "crash"

// scriptTurns is how many turns a child has to append; it is killed long
// before it gets through them.
const scriptTurns = 60

// crashOpen opens the store the crash tests use at path.
func crashOpen(path string, d sqlite.Durability) (*sqlite.Store, error) {
	return sqlite.Open(path, &sqlite.Options{Durability: d})
}

// crashPath makes a fresh place for a store.
func crashPath(t *testing.T) string { return filepath.Join(t.TempDir(), "sessions.db") }

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
			Seq: seq, Time: sessiontest.Base.Add(time.Duration(seq) * time.Millisecond),
			Session: crashID, Turn: session.TurnID(turn), Run: session.RunID("run-" + strconv.FormatInt(start, 10)), Data: p,
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

// TestHelperProcess is the child the crash and lock tests start; it does
// nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("REIN_STORE_CHILD")
	if mode == "" {
		t.Skip("only runs as a child process")
	}
	err := child(mode, os.Getenv("REIN_STORE_PATH"))
	if err != nil {
		fmt.Fprintln(os.Stdout, "error", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func child(mode, path string) error {
	ctx := context.Background()
	d, _ := strconv.Atoi(os.Getenv("REIN_STORE_DURABILITY"))
	st, err := crashOpen(path, sqlite.Durability(d))
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
		start, _ := strconv.ParseInt(os.Getenv("REIN_STORE_START"), 10, 64)
		info, err := st.Info(ctx, crashID)
		if err != nil {
			return err
		}
		if info.LastSeq != start {
			return fmt.Errorf("last seq %d, parent said %d", info.LastSeq, start)
		}
		evs := script(start, scriptTurns)
		r := rand.New(rand.NewPCG(uint64(start), 9))
		for i := 0; i < len(evs); {
			j := min(i+1+r.IntN(6), len(evs))
			if err := st.Append(ctx, crashID, evs[i:j]...); err != nil {
				return err
			}
			say("ok %d", evs[j-1].Seq)
			i = j
			// A model takes far longer between appends; a short pause
			// keeps each run's log small without changing what is tested.
			time.Sleep(200 * time.Microsecond)
		}
	case "hold":
		evs := sessiontest.NewLog(crashID).StartTurn("held").OpenStep("working", "c1").Started("c1").Events
		if err := st.Append(ctx, crashID, evs...); err != nil {
			return err
		}
		say("held %d", os.Getpid())
		time.Sleep(time.Minute) // until killed
	default:
		return extraChild(ctx, mode, st, say)
	}
	return st.Close()
}

// startChild runs TestHelperProcess in mode and returns it with a channel
// of its stdout lines, closed when it exits.
func startChild(t *testing.T, mode, path string, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append(env, "REIN_STORE_CHILD="+mode, "REIN_STORE_PATH="+path)...)
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

// TestB47_CrashKills appends from a child process, kills it with SIGKILL
// at random points, and checks after every kill that each event whose
// Append returned is there, intact, and that the reopened log is
// balanced (B47, B48).
func TestB47_CrashKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hundreds of processes")
	}
	kills := 200
	if *crashSoak > 0 {
		kills = *crashSoak
	}
	ctx := context.Background()
	path := crashPath(t)
	st, err := crashOpen(path, sqlite.DurabilityStep)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, &session.CreateRequest{ID: crashID}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := rand.New(rand.NewPCG(1, 2))
	var last int64
	repaired, torn := 0, 0
	for k := range kills {
		d := sqlite.DurabilityNever
		if k%4 == 0 {
			d = sqlite.DurabilityStep
		}
		cmd, lines := startChild(t, "append", path,
			"REIN_STORE_START="+strconv.FormatInt(last, 10), "REIN_STORE_DURABILITY="+strconv.Itoa(int(d)))
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

		st, err := crashOpen(path, sqlite.DurabilityStep)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", k, err)
		}
		// Everything up to last was checked after the previous kill.
		got, err := sessiontest.ReadAll(ctx, st, crashID, last)
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
		if diff := sessiontest.DiffEvents(wantEv[:len(written)], written); diff != "" {
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
		got = append(make([]session.Event, last), got...)
		last = int64(len(got))
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err = crashOpen(path, sqlite.DurabilityStep)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := sessiontest.ReadAll(ctx, st, crashID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Balanced(all); err != nil || int64(len(all)) != last {
		t.Fatalf("whole log: %d events (want %d), %v", len(all), last, err)
	}
	if fix, err := session.RepairLog(ctx, st, crashID); err != nil || len(fix) != 0 {
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

// TestB50_LockHeldByAnotherProcess: a second process cannot append to a
// session a live process appends to, and the error names the holder; once
// the holder dies, the session opens and its open turn is closed.
func TestB50_LockHeldByAnotherProcess(t *testing.T) {
	ctx := context.Background()
	path := crashPath(t)
	st, err := crashOpen(path, sqlite.DurabilityStep)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: crashID}); err != nil {
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
	next := sessiontest.NewLog(crashID).StartTurn("held").OpenStep("working", "c1").Started("c1").StartTurn("mine").Events[5:]
	err = st.Append(ctx, crashID, next...)
	if !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Append while another process holds the session: err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "pid "+pid) {
		t.Errorf("error %q does not name the holder, pid %s", err, pid)
	}
	if err := st.Delete(ctx, crashID); !errors.Is(err, session.ErrLocked) {
		t.Errorf("Delete while another process holds the session: err = %v, want ErrLocked", err)
	}
	// Readers need no lock, and see the holder's open turn as it is.
	got, err := sessiontest.ReadAll(ctx, st, crashID, 0)
	if err != nil || len(got) != 5 {
		t.Fatalf("read while held: %d events, %v; want 5", len(got), err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The holder died mid-turn: opening closes its turn (B48).
	got, err = sessiontest.ReadAll(ctx, st, crashID, 0)
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
	l := sessiontest.NewLog(crashID)
	l.Events = got
	l.StartTurn("mine")
	if err := st.Append(ctx, crashID, l.Events[len(got):]...); err != nil {
		t.Fatalf("Append after the holder died: %v", err)
	}
}
