package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session with a subagent replays offline, the child from its own log.
func TestReplaySessionWithChildren(t *testing.T) {
	r, _, e := runSubagent(t)
	parent := strings.TrimSpace(r.stderr[strings.LastIndex(r.stderr, "session ")+len("session "):])

	rp := e.run(nil, "replay", "--store", e.store, parent)
	if rp.code != 0 {
		t.Fatalf("replay: exit %d\n%s", rp.code, rp.stderr)
	}
	for _, want := range []string{
		"  [counter] » count the files\n",
		"  [counter] 3 files\n",
		"replayed 2 turns, 3 model responses, 1 tool call; 0 divergences\n",
	} {
		if !strings.Contains(rp.stderr, want) {
			t.Errorf("replay's stderr lacks %q:\n%s", want, rp.stderr)
		}
	}
	if !strings.Contains(rp.stdout, "There are 3 files.") {
		t.Errorf("replay's stdout = %q", rp.stdout)
	}

	// An export holds the parent's log only: the spawn plays back its
	// recorded result.
	ex := e.run(nil, "sessions", "export", "--store", e.store, parent)
	file := filepath.Join(e.home, "parent.ndjson")
	if err := os.WriteFile(file, []byte(ex.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	rp = e.run(nil, "replay", "--store", e.store, file)
	if rp.code != 0 || !strings.Contains(rp.stderr, "its recorded result is used") || !strings.Contains(rp.stderr, "; 0 divergences\n") {
		t.Errorf("replay of the export: exit %d\n%s", rp.code, rp.stderr)
	}
}
