package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/session"
)

func TestTurnExit(t *testing.T) {
	tests := []struct {
		name string
		end  *session.TurnEnd
		err  error
		want int
	}{
		{name: "completed", end: &session.TurnEnd{Reason: session.EndCompleted}, want: exitOK},
		{name: "ctrl-c", end: &session.TurnEnd{Reason: session.EndAborted, Cause: "user"}, want: exitCancelled},
		{name: "timeout", end: &session.TurnEnd{Reason: session.EndAborted, Cause: "timeout"}, want: exitStopped},
		{name: "max steps", end: &session.TurnEnd{Reason: session.EndMaxSteps}, want: exitStopped},
		{name: "budget", end: &session.TurnEnd{Reason: session.EndBudget}, want: exitStopped},
		{name: "blocked", end: &session.TurnEnd{Reason: session.EndBlocked}, want: exitStopped},
		{name: "max tokens", end: &session.TurnEnd{Reason: session.EndMaxTokens}, want: exitStopped},
		{name: "error", end: &session.TurnEnd{Reason: session.EndError, Message: "boom"}, want: exitError},
		{name: "no end", err: errors.New("store failed"), want: exitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := turnExit(tt.end, tt.err)
			got := exitOK
			var ce *codeError
			if errors.As(err, &ce) {
				got = ce.code
			} else if err != nil {
				t.Fatalf("err %v is not a codeError", err)
			}
			if got != tt.want {
				t.Errorf("exit = %d, want %d (err %v)", got, tt.want, err)
			}
		})
	}
}

// A command that a signal interrupted before its turn could end (while
// it opened a store or submitted to a queue) exits as cancelled; without
// a signal the same error is an error, and a usage error stays one.
func TestExitCodeOfInterruptedCommand(t *testing.T) {
	open := fmt.Errorf("open workflow engine: %w", context.Canceled)
	tests := []struct {
		name        string
		err         error
		interrupted bool
		want        int
		says        string
	}{
		{"interrupted while opening", open, true, exitCancelled, "rein: open workflow engine: context canceled\n"},
		{"failed to open", open, false, exitError, "rein: open workflow engine: context canceled\n"},
		{"usage", usageErrorf("bad flag"), true, exitUsage, "rein: bad flag\n"},
		{"turn stopped", &codeError{code: exitStopped, err: errors.New("limit")}, true, exitStopped, "rein: limit\n"},
		{"ok", nil, true, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if got := exitCode(tt.err, tt.interrupted, &out); got != tt.want || out.String() != tt.says {
				t.Errorf("exitCode = %d, said %q; want %d, %q", got, out.String(), tt.want, tt.says)
			}
		})
	}
}

func TestContextFiles(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, ".git"), 0o755)
	sub := filepath.Join(root, "a", "b")
	os.MkdirAll(sub, 0o755)
	for _, p := range []string{"AGENTS.md", "a/CLAUDE.md", "a/b/AGENTS.md"} {
		os.WriteFile(filepath.Join(root, p), []byte(p), 0o644)
	}
	// Above the repository root: never read.
	os.WriteFile(filepath.Join(filepath.Dir(root), "AGENTS.md"), []byte("outside"), 0o644)
	defer os.Remove(filepath.Join(filepath.Dir(root), "AGENTS.md"))
	m, err := loadMemory(sub)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.Files() {
		if f.Scope == "project" {
			got = append(got, f.Path)
		}
	}
	want := []string{filepath.Join(root, "AGENTS.md"), filepath.Join(root, "a", "CLAUDE.md"), filepath.Join(root, "a", "b", "AGENTS.md")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("memory files (-want +got):\n%s", diff)
	}
}

func TestOpenStoreSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, spec := range []string{"mem:", "sqlite:" + filepath.Join(dir, "a.db"), "jsonl:" + filepath.Join(dir, "j")} {
		st, err := openStore(spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		st.Close()
	}
	// A file where the store's directory must go cannot be written to.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"sqlite", "redis:x", "", "jsonl:" + filepath.Join(blocker, "sessions"), "sqlite:" + filepath.Join(blocker, "x", "a.db")} {
		_, err := openStore(spec)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: err = %v, want a usage error", spec, err)
		}
	}
}

func TestParseToolList(t *testing.T) {
	tests := []struct {
		spec string
		want []string
	}{
		{"", defaultTools},
		{"none", nil},
		{"read, grep", []string{"read", "grep"}},
	}
	for _, tt := range tests {
		got, err := parseToolList(tt.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.spec, diff)
		}
	}
	got, _ := parseToolList("", &config{Tools: []string{"ls"}})
	if diff := cmp.Diff([]string{"ls"}, got); diff != "" {
		t.Errorf("config tools (-want +got):\n%s", diff)
	}
}

func TestRenderMarkdown(t *testing.T) {
	md := &markdown{dark: true}
	got := md.render("# Title\n\nSome **bold** and `code`.\n\n- item\n\n```\nfenced\n```\n\nplain", 40)
	var plain []string
	for _, l := range got {
		plain = append(plain, strings.TrimSpace(stripANSI(l)))
	}
	// Markup is rendered, not shown: no #, ** or backticks are left.
	want := []string{"Title", "", "Some bold and code.", "", "• item", "", "fenced", "", "plain"}
	if diff := cmp.Diff(want, plain); diff != "" {
		t.Errorf("rendered Markdown (-want +got):\n%s", diff)
	}
}

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")
