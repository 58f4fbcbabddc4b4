package fs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

// TestHardLinkOutsideRefused: a hard link inside the workspace to a file
// outside it is neither read, searched nor written through.
func TestHardLinkOutsideRefused(t *testing.T) {
	ws := workspace(t)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	os.MkdirAll(outside, 0o755)
	secret := filepath.Join(outside, "id_key")
	os.WriteFile(secret, []byte("HARDLINKED SECRET\n"), 0o600)
	if err := os.Link(secret, filepath.Join(ws, "notes.txt")); err != nil {
		t.Skipf("cannot make a hard link here: %v", err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range NewTools(&sandbox.Policy{Root: ws}, nil) {
		byName[tl.Spec().Name] = tl
	}
	calls := []struct{ tool, args string }{
		{"read", `{"path":"notes.txt"}`},
		{"grep", `{"pattern":"SECRET"}`},
		{"grep", `{"pattern":"SECRET","path":"notes.txt"}`},
		{"write", `{"path":"notes.txt","content":"overwritten"}`},
		{"edit", `{"path":"notes.txt","old_string":"SECRET","new_string":"x"}`},
	}
	for _, c := range calls {
		res, err := byName[c.tool].Call(context.Background(), &tool.Call{Name: c.tool, Args: json.RawMessage(c.args), Session: "s"})
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.args, err)
		}
		if text := render(res); strings.Contains(text, "HARDLINKED") {
			t.Errorf("%s %s read through the hard link: %s", c.tool, c.args, text)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "HARDLINKED SECRET\n" {
		t.Errorf("the file outside changed: %q", b)
	}
}
