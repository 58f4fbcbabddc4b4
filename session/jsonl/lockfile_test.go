package jsonl_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
)

// A store that closes cleanly leaves no lock file, and the session opens
// again for appending, in this store or the next.
func TestCleanCloseLeavesNoLockFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for round := range 2 {
		st, err := jsonl.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := session.ID("s1")
		if round == 0 {
			if _, err := st.Create(ctx, &session.CreateRequest{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		ev := session.Event{Seq: int64(round + 1), Session: id, Data: &session.SessionMeta{Key: "k", Value: "v"}}
		if err := st.Append(ctx, id, ev); err != nil {
			t.Fatalf("round %d: Append: %v", round, err)
		}
		if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(locks) != 1 {
			t.Errorf("round %d: %d lock files while appending, want 1", round, len(locks))
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(locks) != 0 {
			t.Errorf("round %d: lock files after Close: %v", round, locks)
		}
	}
}
