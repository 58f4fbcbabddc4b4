package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scrollModel is a chat of n notices of one line each, on a screen with
// room for a few of them.
func scrollModel(n int) *chatModel {
	m := newChatModel(&app{}, &agentFlags{}, &setup{target: target{provider: providers[0], model: "claude-sonnet-4-5"}}, nil)
	m.width, m.height = 60, 8
	for i := range n {
		m.notice(fmt.Sprintf("n%02d", i))
	}
	return m
}

func shown(m *chatModel) []string {
	var out []string
	for _, l := range strings.Split(m.View().Content, "\n") {
		if l = strings.TrimSpace(stripANSI(l)); strings.HasPrefix(l, "· n") {
			out = append(out, strings.TrimPrefix(l, "· "))
		}
	}
	return out
}

func TestChatScrollKeepsItsPlace(t *testing.T) {
	m := scrollModel(20)
	room := m.room()
	if got := shown(m); len(got) != room || got[len(got)-1] != "n19" {
		t.Fatalf("following the end shows %q, want the last %d", got, room)
	}
	m.scrollUp(5)
	want := shown(m)
	if want[0] != fmt.Sprintf("n%02d", 20-room-5) {
		t.Fatalf("5 lines up shows %q", want)
	}
	// New lines while scrolled back do not move the view.
	m.notice("n20")
	if diff := cmp.Diff(want, shown(m)); diff != "" {
		t.Errorf("the view moved as a line arrived (-want +got):\n%s", diff)
	}
	m.scrollUp(100)
	if got := shown(m); got[0] != "n00" {
		t.Errorf("scrolling past the top shows %q, want n00 first", got)
	}
	m.scrollDown(100)
	if m.top != nil {
		t.Errorf("scrolling past the end keeps a place %v, want to follow the end", *m.top)
	}
	if got := shown(m); got[len(got)-1] != "n20" {
		t.Errorf("back at the end shows %q", got)
	}
	// A transcript that fits the screen does not scroll.
	short := scrollModel(2)
	short.scrollUp(3)
	if short.top != nil {
		t.Errorf("a transcript that fits scrolled to %v", *short.top)
	}
}

func TestDiffLines(t *testing.T) {
	got := diffLines("a\nold\nz\n", "a\nnew\nnewer\nz\n")
	for i := range got {
		got[i] = stripANSI(got[i])
	}
	if diff := cmp.Diff([]string{"  a", "- old", "+ new", "+ newer", "  z"}, got); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
}

func TestSwitchBaseURL(t *testing.T) {
	cur := target{provider: providers[0], model: "claude-sonnet-4-5"}
	openai, _ := lookupProvider("openai")
	for _, tt := range []struct {
		from    target
		baseURL string
		spec    string
		want    string
		refused bool
	}{
		{cur, "http://proxy", "anthropic/claude-haiku-4-5", "http://proxy", false},
		{cur, "", "openai/gpt-5", "", false},
		{cur, "http://proxy", "openai/gpt-5", "", true},
		{target{provider: openai, model: "gpt-5"}, "http://proxy", "openai-responses/gpt-5", "http://proxy", false},
	} {
		got, err := switchBaseURL(tt.from, tt.baseURL, tt.spec)
		if (err != nil) != tt.refused || got != tt.want {
			t.Errorf("%s with --base-url %q → %q, %v; want %q, refused %v", tt.spec, tt.baseURL, got, err, tt.want, tt.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "--base-url") || strings.Contains(err.Error(), tt.baseURL)) {
			t.Errorf("the refusal should name the flag, not the address: %v", err)
		}
	}
}

func TestEditorHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "chat_history.jsonl")
	e := newEditor()
	e.loadHistory(path)
	e.submitted("one")
	e.submitted("two\nlines")
	e.submitted("two\nlines") // a repeat is kept once
	again := newEditor()
	again.loadHistory(path)
	if diff := cmp.Diff([]string{"one", "two\nlines"}, again.history); diff != "" {
		t.Errorf("history read back (-want +got):\n%s", diff)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want readable by the user only", st.Mode().Perm())
	}
	// A long file is cut to what is recalled.
	for i := range 2*historyKeep + 1 {
		again.submitted(fmt.Sprint("p", i))
	}
	third := newEditor()
	third.loadHistory(path)
	if len(third.history) != historyKeep || third.history[historyKeep-1] != fmt.Sprint("p", 2*historyKeep) {
		t.Errorf("%d entries recalled, last %q; want %d ending with the newest", len(third.history), third.history[len(third.history)-1], historyKeep)
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != historyKeep {
		t.Errorf("the file keeps %d lines, want %d", n, historyKeep)
	}
}

func TestChatStreamingRendersWholeParagraphs(t *testing.T) {
	m := scrollModel(0)
	m.appendText(blockAssistant, "Some **bold** words.\n\n```\ncode\n\nmore\n")
	var got []string
	for _, l := range m.lines(0) {
		got = append(got, strings.TrimSpace(stripANSI(l)))
	}
	// The first paragraph is whole and rendered; the open fence is shown
	// as it is until it closes.
	want := []string{"Some bold words.", "", "```", "code", "", "more"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streaming lines (-want +got):\n%s", diff)
	}
	if n := paragraphsEnd("a\n\nb"); n != 3 {
		t.Errorf("paragraphsEnd = %d, want 3", n)
	}
}
