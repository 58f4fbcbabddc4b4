package main

import (
	"github.com/charmbracelet/x/ansi"
	"github.com/reinhq/rein/internal/termmd"
)

// markdown renders answers in the palette that suits the terminal's
// background.
type markdown struct {
	dark bool
}

func (md *markdown) setDark(dark bool) { md.dark = dark }

// render is s as the terminal's lines, at most w cells wide.
func (md *markdown) render(s string, w int) []string {
	return termmd.Render(s, w, md.dark)
}

// stripStyle removes the terminal's escape sequences from s.
func stripStyle(s string) string { return ansi.Strip(s) }
