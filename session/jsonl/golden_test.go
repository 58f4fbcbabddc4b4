package jsonl_test

import (
	"bytes"
	"context"
	"github.com/reinhq/rein/internal/golden"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
)

var update = golden.Update // the shared -update flag

// TestFileFormatGolden pins the bytes of a session file: header, one
// event per line, packed chunks. A change here is a format change.
func TestFileFormatGolden(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := open(t, dir, &jsonl.Options{Now: func() time.Time { return sessiontest.Base }})
	defer st.Close()
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "golden", WorkDir: "/src/app", Meta: map[string]string{"title": "golden"}}); err != nil {
		t.Fatal(err)
	}
	events := sessiontest.AllPayloads("golden")
	// Two more chunks after the first make a packed run of three.
	var withRun []session.Event
	for _, e := range events {
		withRun = append(withRun, e)
		if c, ok := e.Data.(*session.AssistantChunk); ok {
			for i := range 2 {
				e2 := e
				e2.Time = e.Time.Add(time.Duration(i+1) * time.Microsecond)
				e2.Data = &session.AssistantChunk{Step: c.Step, Deltas: []session.ChunkDelta{{Kind: "text", Text: "lo"}}}
				withRun = append(withRun, e2)
			}
		}
	}
	for i := range withRun {
		withRun[i].Seq = int64(i + 1)
	}
	if err := st.Append(ctx, "golden", withRun...); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(st.Path("golden"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("session file differs from %s (run with -update if the change is meant):\n--- want\n%s\n--- got\n%s", golden, want, got)
	}
	read, err := sessiontest.ReadAll(ctx, st, "golden", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sessiontest.DiffEvents(withRun, read); diff != "" {
		t.Errorf("events read back (-want +got):\n%s", diff)
	}
}
