package vocab_test

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/tool/vocab"
)

func TestReinNamesEveryRow(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range vocab.Table {
		got, ok := vocab.Rein(r.Theirs)
		if !ok || got != r.Tool {
			t.Errorf("Rein(%q) = %q, %v; want %q", r.Theirs, got, ok, r.Tool)
		}
		if seen[r.Theirs] || seen[r.Tool] {
			t.Errorf("%s/%s appears twice", r.Tool, r.Theirs)
		}
		seen[r.Theirs], seen[r.Tool] = true, true
	}
	if _, ok := vocab.Rein("read"); ok {
		t.Error("rein's own name maps as if it were the other format's")
	}
}

func ExampleRein() {
	for _, name := range []string{"Read", "Bash", "WebFetch"} {
		rein, ok := vocab.Rein(name)
		fmt.Println(name, rein, ok)
	}
	// Output:
	// Read read true
	// Bash shell true
	// WebFetch  false
}
