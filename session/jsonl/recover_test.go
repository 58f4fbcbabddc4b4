package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
)

// setup writes events to a new session "s" in dir and closes the store.
func setup(t *testing.T, events []session.Event) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	st := open(t, dir, nil)
	defer st.Close()
	if _, err := st.Create(context.Background(), &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(context.Background(), "s", events...); err != nil {
		t.Fatal(err)
	}
	return dir, st.Path("s")
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))
}

func writeLines(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestB47_TornLineDropped(t *testing.T) {
	l := sessiontest.NewLog("s").FullTurn("one", "c1").StartTurn("two")
	dir, path := setup(t, l.Events)
	good, _ := os.ReadFile(path)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":` + strconv.Itoa(len(l.Events)+1) + `,"time":"2026-03-14T15:09`)
	f.Close()

	ctx := context.Background()
	st := open(t, dir, nil)
	defer st.Close()
	got, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if err != nil {
		t.Fatalf("Events with a torn last line: %v", err)
	}
	if diff := sessiontest.DiffEvents(l.Events, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good) {
		t.Errorf("file after open is %d bytes, want the %d bytes before the torn line", len(b), len(good))
	}
	// The next append goes where the torn line was; nothing is merged with it.
	l.OpenStep("working")
	if err := st.Append(ctx, "s", l.Events[len(got):]...); err != nil {
		t.Fatal(err)
	}
	got, err = sessiontest.ReadAll(ctx, open(t, dir, &jsonl.Options{ReadOnly: true}), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(l.Events, got); diff != "" {
		t.Errorf("events after the next append (-want +got):\n%s", diff)
	}
}

func TestB49_CorruptLineBeforeTurnEnd(t *testing.T) {
	l := sessiontest.NewLog("s").FullTurn("one", "c1").FullTurn("two")
	dir, path := setup(t, l.Events)
	lines := readLines(t, path)
	lines[3] = []byte(`{"seq":3,"time":"2026-03-14T15:09:26Z","type":"step.start","data":{` + "\n") // line 4
	writeLines(t, path, lines)
	before, _ := os.ReadFile(path)

	ctx := context.Background()
	st := open(t, dir, nil)
	defer st.Close()
	_, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("Events: err = %v, want ErrCorrupt", err)
	}
	for _, want := range []string{path, "line 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	next := sessiontest.NewLog("s").FullTurn("one", "c1").FullTurn("two").StartTurn("three").Events[len(l.Events):]
	if err := st.Append(ctx, "s", next...); !errors.Is(err, session.ErrCorrupt) {
		t.Errorf("Append: err = %v, want ErrCorrupt", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("a corrupt file was changed (%d bytes, was %d); it must never be cut silently", len(after), len(before))
	}
}

func TestB47_CorruptTailAfterLastTurnEndIsCut(t *testing.T) {
	base := sessiontest.NewLog("s").FullTurn("one", "c1")
	n := len(base.Events)
	l := sessiontest.NewLog("s").FullTurn("one", "c1").StartTurn("two").OpenStep("hm", "c2")
	for _, tc := range []struct {
		name string
		edit func(line []byte) []byte
	}{
		{"undecodable", func([]byte) []byte { return []byte("{\"seq\":garbage}\n") }},
		{"seq gap", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{"seq":`+strconv.Itoa(n+2)), []byte(`{"seq":`+strconv.Itoa(n+7)), 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := setup(t, l.Events)
			lines := readLines(t, path)
			cut := 1 + n + 1 // header, the first turn, then the second turn's first event
			lines[cut] = tc.edit(lines[cut])
			writeLines(t, path, lines)
			want := bytes.Join(lines[:cut], nil)

			ctx := context.Background()
			st := open(t, dir, nil)
			defer st.Close()
			got, err := sessiontest.ReadAll(ctx, st, "s", 0)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if diff := sessiontest.DiffEvents(l.Events[:n+1], got); diff != "" {
				t.Errorf("events kept (-want +got):\n%s", diff)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, want) {
				t.Errorf("file is %d bytes after open, want it cut to %d", len(b), len(want))
			}
			if err := st.Append(ctx, "s", l.Events[n+1:]...); err != nil {
				t.Fatalf("Append after the cut: %v", err)
			}
		})
	}
}

func TestB49_UnknownVersionUnsupported(t *testing.T) {
	dir, path := setup(t, sessiontest.NewLog("s").FullTurn("one").Events)
	lines := readLines(t, path)
	lines[0] = bytes.Replace(lines[0], []byte(`"version":1`), []byte(`"version":2`), 1)
	writeLines(t, path, lines)
	ctx := context.Background()
	st := open(t, dir, nil)
	defer st.Close()
	_, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if !errors.Is(err, session.ErrUnsupported) || errors.Is(err, session.ErrCorrupt) {
		t.Errorf("Events: err = %v, want ErrUnsupported and not ErrCorrupt", err)
	}
	if _, err := st.Info(ctx, "s"); !errors.Is(err, session.ErrUnsupported) {
		t.Errorf("Info: err = %v, want ErrUnsupported", err)
	}
}

// TestB47_FailedAppendTruncated: an append that fails part way (here the
// file size limit, in a child process) leaves no partial bytes behind.
func TestB47_FailedAppendTruncated(t *testing.T) {
	l := sessiontest.NewLog(sessiontest.CrashID).FullTurn("one", "c1")
	dir := t.TempDir()
	st := open(t, dir, nil)
	ctx := context.Background()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: sessiontest.CrashID}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, sessiontest.CrashID, l.Events...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cmd, lines := sessiontest.StartChild(t, "fsize", dir, jsonl.DurabilityNever)
	var reply []string
	for line := range lines {
		reply = append(reply, line)
	}
	cmd.Wait()
	if len(reply) != 1 || !strings.HasPrefix(reply[0], "failed ") {
		t.Fatalf("child said %q, want one failed append", reply)
	}
	f := strings.Fields(reply[0])
	last, _ := strconv.ParseInt(f[1], 10, 64)
	if !strings.Contains(reply[0], "file too large") {
		t.Errorf("the append failed with %q, want the file size limit", reply[0])
	}
	b, _ := os.ReadFile(st.Path(sessiontest.CrashID))
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("file ends with %q, want a whole line", b[max(0, len(b)-20):])
	}
	ro := open(t, dir, &jsonl.Options{ReadOnly: true})
	got, err := sessiontest.ReadAll(ctx, ro, sessiontest.CrashID, 0)
	if err != nil || int64(len(got)) != last {
		t.Fatalf("read %d events, %v; want %d (the last append that returned)", len(got), err, last)
	}
}

func TestPackedChunks(t *testing.T) {
	l := sessiontest.NewLog("s").StartTurn("go")
	l.Add(&session.StepStart{Step: 1})
	for i := range 5 {
		l.Add(&session.AssistantChunk{Step: 1, Deltas: []session.ChunkDelta{{Kind: "text", Text: "part " + strconv.Itoa(i)}}})
	}
	l.Events[len(l.Events)-1].Time = l.Events[len(l.Events)-1].Time.Add(123456789 * time.Nanosecond)
	l.Step("").EndTurn()
	dir, path := setup(t, l.Events)
	packed := 0
	for _, line := range readLines(t, path) {
		if bytes.HasPrefix(line, []byte(`{"pack":5,`)) {
			packed++
		}
	}
	if packed != 1 {
		t.Errorf("%d lines pack the five chunks, want 1", packed)
	}
	st := open(t, dir, nil)
	defer st.Close()
	for _, after := range []int64{0, 4, 6} {
		got, err := sessiontest.ReadAll(context.Background(), st, "s", after)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sessiontest.DiffEvents(l.Events[after:], got); diff != "" {
			t.Errorf("after %d: events (-want +got):\n%s", after, diff)
		}
	}
}

func TestReadOnly(t *testing.T) {
	l := sessiontest.NewLog("s").FullTurn("one")
	dir, path := setup(t, l.Events)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":9`)
	f.Close()
	before, _ := os.ReadFile(path)
	st := open(t, dir, &jsonl.Options{ReadOnly: true})
	defer st.Close()
	ctx := context.Background()
	got, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if err != nil || len(got) != len(l.Events) {
		t.Fatalf("read %d events, %v; want %d", len(got), err, len(l.Events))
	}
	if err := st.Append(ctx, "s", sessiontest.NewLog("s").FullTurn("one").FullTurn("two").Events[len(l.Events):]...); err == nil {
		t.Error("Append to a read-only store succeeded")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a read-only store changed the file")
	}
}
