package jsonl_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
)

// FuzzOpenFile writes arbitrary bytes after a valid header and reads the
// session: the store may refuse the file, but must not panic, and what it
// yields must have consecutive seqs from 1.
func FuzzOpenFile(f *testing.F) {
	f.Add([]byte("{\"seq\":1,\"time\":\"2026-01-01T00:00:00Z\",\"session\":\"f\",\"turn\":\"t\",\"run\":\"r\",\"type\":\"turn.start\",\"data\":{\"trigger\":\"prompt\"}}\n"))
	f.Add([]byte("{\"pack\":2,\"seq\":1,\"time\":\"2026-01-01T00:00:00Z\",\"type\":\"assistant.chunk\",\"dt\":[0,5],\"data\":[{\"step\":1,\"deltas\":[]},{\"step\":1,\"deltas\":[]}]}\n"))
	f.Add([]byte("{\"pack\":3,\"seq\":1,\"dt\":[0],\"data\":[]}\n{\"seq\":2"))
	f.Add([]byte("{\"seq\":1,\"type\":\"turn.end\"}\nnot json\n{\"seq\":3,\"type\":\"turn.end\"}\n"))
	header := []byte(`{"format":"rein.session","version":1,"id":"f","created":"2026-01-01T00:00:00Z"}` + "\n")
	f.Fuzz(func(t *testing.T, body []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.jsonl"), append(append([]byte{}, header...), body...), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{true, false} {
			st, err := jsonl.Open(dir, &jsonl.Options{ReadOnly: ro, Durability: jsonl.DurabilityNever})
			if err != nil {
				t.Fatal(err)
			}
			want := int64(1)
			for e, err := range st.Events(context.Background(), "f", 0) {
				if err != nil {
					break
				}
				if e.Seq != want {
					t.Fatalf("event seq %d, want %d", e.Seq, want)
				}
				want++
			}
			st.Info(context.Background(), "f")
			st.Close()
		}
		_ = session.ErrCorrupt
	})
}
