package main

import (
	"strings"

	"charm.land/glamour/v2"
	"charm.land/glamour/v2/styles"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// markdown renders answers with glamour in the style that suits the
// terminal's background, one renderer per width, made when first needed.
type markdown struct {
	dark bool
	r    *glamour.TermRenderer
	w    int
	rd   bool // the renderer's style is the dark one
}

func (md *markdown) setDark(dark bool) { md.dark = dark }

// render is s as the terminal's lines; text glamour cannot render is
// shown as it is, wrapped.
func (md *markdown) render(s string, w int) []string {
	if md.r == nil || md.w != w || md.rd != md.dark {
		md.r, md.w, md.rd = newMarkdownRenderer(w, md.dark), w, md.dark
	}
	out := ""
	if md.r != nil {
		out, _ = md.r.Render(s)
	}
	if out == "" {
		out = lipgloss.NewStyle().Width(w).Render(strings.TrimRight(s, "\n"))
	}
	lines := strings.Split(out, "\n")
	for len(lines) > 0 && strings.TrimSpace(stripStyle(lines[0])) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(stripStyle(lines[len(lines)-1])) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func newMarkdownRenderer(w int, dark bool) *glamour.TermRenderer {
	st := styles.LightStyleConfig
	if dark {
		st = styles.DarkStyleConfig
	}
	// The transcript has no margin of its own to spare.
	st.Document.Margin = new(uint)
	st.Document.BlockPrefix, st.Document.BlockSuffix = "", ""
	r, err := glamour.NewTermRenderer(glamour.WithStyles(st), glamour.WithWordWrap(w))
	if err != nil {
		return nil
	}
	return r
}

// stripStyle removes the terminal's escape sequences from s.
func stripStyle(s string) string { return ansi.Strip(s) }
