package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// How much of a tool card's body shows: collapsed (the default) and
// expanded with Ctrl+O.
const (
	cardOutputLines = 4
	cardDiffLines   = 12
	cardMaxLines    = 400
)

// toolCard is a call's card: its name and arguments, a diff for the file
// tools that change files, the start of what the tool printed, and how it
// ended.
func (m *chatModel) toolCard(b *block, w int) []string {
	mark, tail := cardMark(b)
	diff, path := editDiff(b.name, b.args)
	what := path
	if what == "" {
		what = shortArgs(b.args)
	}
	out := []string{"┌ " + fmt.Sprintf("%s %s %s", mark, styleHeading.Render(b.name), shorten(what, max(w-len(b.name)-8, 10)))}
	out = append(out, m.cardSection(diff, cardDiffLines, w)...)
	if b.status != "running" {
		out = append(out, m.cardSection(outputLines(b.text), cardOutputLines, w)...)
	}
	return append(out, "└ "+styleNotice.Render(tail))
}

// cardMark is a card's outcome mark and its last line.
func cardMark(b *block) (mark, tail string) {
	switch b.status {
	case "running":
		return styleWarn.Render("⋯"), fmt.Sprintf("running %s", time.Since(b.started).Round(time.Second))
	case "ok":
		return styleOK.Render("✓"), b.duration.Round(time.Millisecond).String()
	case "blocked", "cancelled":
		return styleWarn.Render("⊘"), b.status + " · " + b.duration.Round(time.Millisecond).String()
	}
	return styleError.Render("✗"), "error · " + b.duration.Round(time.Millisecond).String()
}

// cardSection is lines inside a card, cut to limit unless the cards are
// expanded, with a line that says how many more there are.
func (m *chatModel) cardSection(lines []string, limit, w int) []string {
	if m.expandTools {
		limit = cardMaxLines
	}
	var out []string
	for i, l := range lines {
		if i == limit {
			hint := "Ctrl+O shows all"
			if m.expandTools {
				hint = "the rest is in the session log"
			}
			out = append(out, "│ "+styleNotice.Render(fmt.Sprintf("… %d more lines (%s)", len(lines)-limit, hint)))
			break
		}
		out = append(out, "│ "+ansi.Truncate(l, max(w-2, 10), "…"))
	}
	return out
}

// outputLines is a tool's printed text as plain lines: escape sequences
// a command printed are dropped, so they cannot drive the terminal.
func outputLines(s string) []string {
	s = strings.TrimRight(ansi.Strip(s), "\n")
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(s, "\t", "    "), "\n")
}

// editDiff is the change a file tool's arguments make, as removed and
// added lines, and the path it changes; nothing for other tools.
func editDiff(name string, args []byte) ([]string, string) {
	var a struct {
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil, ""
	}
	var out []string
	switch name {
	case "edit":
		out = diffLines(a.OldString, a.NewString)
	case "multi_edit":
		for i, e := range a.Edits {
			if i > 0 {
				out = append(out, styleNotice.Render("⋯"))
			}
			out = append(out, diffLines(e.OldString, e.NewString)...)
		}
	case "write":
		out = diffLines("", a.Content)
	default:
		return nil, ""
	}
	return out, a.Path
}

// diffLines shows old replaced by new: the lines they share at either
// end once, plainly, and the lines between as removed and added.
func diffLines(old, new string) []string {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(ansi.Strip(s), "\n"), "\n")
	}
	o, n := split(old), split(new)
	pre := 0
	for pre < len(o) && pre < len(n) && o[pre] == n[pre] {
		pre++
	}
	post := 0
	for post < len(o)-pre && post < len(n)-pre && o[len(o)-1-post] == n[len(n)-1-post] {
		post++
	}
	var out []string
	for _, l := range o[:pre] {
		out = append(out, "  "+l)
	}
	for _, l := range o[pre : len(o)-post] {
		out = append(out, styleDel.Render("- "+l))
	}
	for _, l := range n[pre : len(n)-post] {
		out = append(out, styleAdd.Render("+ "+l))
	}
	for _, l := range o[len(o)-post:] {
		out = append(out, "  "+l)
	}
	return out
}
