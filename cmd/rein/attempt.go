package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// attempt is the text of the model's response in flight: streamed but not
// yet recorded, so a retry may still take it back. On a terminal it is
// shown as it streams and erased when the attempt fails; elsewhere (a
// pipe, a file) nothing of it is written, and the answer is printed when
// the log records it, so a consumer never reads a failed attempt's text.
type attempt struct {
	// screen reports the terminal's columns and rows; nil when the output
	// is not a terminal and streamed text is held back.
	screen  func() (cols, rows int, err error)
	pending strings.Builder // the attempt's text so far
}

// newAttempt is the attempt state for out: live when f, the file behind
// it, is a terminal.
func newAttempt(f *os.File) *attempt {
	if f == nil || !isTerminal(f) {
		return &attempt{}
	}
	fd := f.Fd()
	return &attempt{screen: func() (int, int, error) { return term.GetSize(fd) }}
}

// live reports whether streamed text is shown as it comes.
func (a *attempt) live() bool { return a.screen != nil }

// streamed notes text the attempt streamed.
func (a *attempt) streamed(s string) { a.pending.WriteString(s) }

// shown reports whether the attempt has streamed text.
func (a *attempt) shown() bool { return a.pending.Len() > 0 }

// confirm ends the attempt: its text is the recorded answer.
func (a *attempt) confirm() { a.pending.Reset() }

// erase takes the attempt's text back from the terminal: it moves the
// cursor to where the text began and clears to the end of the screen. It
// reports false, erasing nothing, when the text has scrolled out of sight
// or the terminal's size is unknown.
func (a *attempt) erase(w io.Writer) bool {
	cols, rows, err := a.screen()
	if err != nil || cols <= 0 || rows <= 0 {
		return false
	}
	up := cursorRow(a.pending.String(), cols)
	if up >= rows {
		return false
	}
	if up > 0 {
		fmt.Fprintf(w, "\r\x1b[%dA\x1b[J", up)
	} else {
		io.WriteString(w, "\r\x1b[J")
	}
	return true
}

// cursorRow is the row, counted from the first, the cursor is on after
// text written from the start of a line on a terminal cols wide.
func cursorRow(text string, cols int) int {
	lines := strings.Split(text, "\n")
	row := 0
	for _, l := range lines[:len(lines)-1] {
		row += max(1, (ansi.StringWidth(l)+cols-1)/cols)
	}
	if w := ansi.StringWidth(lines[len(lines)-1]); w > 0 {
		// A line that fills its last row exactly leaves the cursor there,
		// waiting to wrap.
		row += (w - 1) / cols
	}
	return row
}
