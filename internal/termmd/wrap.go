package termmd

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// wrap fills lines of at most width cells with the words of fs, breaking
// at spaces, and breaking a word only when it is wider than a line. Each
// run is styled on its own line, so no style spills from one line into
// the next.
func wrap(fs []frag, width int) []string {
	w := &wrapper{width: width}
	for _, f := range fs {
		if f.text == "\n" {
			w.endWord()
			w.endLine()
			continue
		}
		for i, part := range strings.Split(strings.ReplaceAll(f.text, "\t", " "), " ") {
			if i > 0 {
				w.endWord()
				w.space = &frag{" ", f.st}
			}
			if part != "" {
				w.word = append(w.word, frag{part, f.st})
				w.wordW += ansi.StringWidth(part)
			}
		}
	}
	w.endWord()
	if len(w.line) > 0 || len(w.out) == 0 {
		w.endLine()
	}
	return w.out
}

type wrapper struct {
	width int
	out   []string
	line  []frag // the line being filled
	lineW int
	word  []frag // the word being read
	wordW int
	space *frag // the space before the word, if it stays on this line
}

// endWord places the word read so far.
func (w *wrapper) endWord() {
	if len(w.word) == 0 {
		return
	}
	if len(w.line) > 0 {
		if w.lineW+1+w.wordW <= w.width {
			if w.space != nil {
				w.line = append(w.line, *w.space)
			} else {
				w.line = append(w.line, frag{" ", w.word[0].st})
			}
			w.lineW++
		} else {
			w.endLine()
		}
	}
	for _, f := range w.word {
		w.put(f)
	}
	w.word, w.wordW, w.space = w.word[:0], 0, nil
}

// put adds f to the line, breaking it where it would pass the width.
func (w *wrapper) put(f frag) {
	for f.text != "" {
		room := w.width - w.lineW
		head, rest, used := cut(f.text, room)
		if head == "" && w.lineW > 0 {
			w.endLine()
			continue
		}
		if head == "" { // one character wider than the line: place it alone
			head, rest, used = firstRune(f.text)
		}
		w.line = append(w.line, frag{head, f.st})
		w.lineW += used
		f.text = rest
		if rest != "" {
			w.endLine()
		}
	}
}

func (w *wrapper) endLine() {
	var b strings.Builder
	for _, f := range w.line {
		b.WriteString(f.st.Render(f.text))
	}
	w.out = append(w.out, b.String())
	w.line, w.lineW, w.space = nil, 0, nil
}

// cut splits s after as many characters as fit in room cells.
func cut(s string, room int) (head, rest string, used int) {
	for i, r := range s {
		rw := ansi.StringWidth(string(r))
		if used+rw > room {
			return s[:i], s[i:], used
		}
		used += rw
	}
	return s, "", used
}

func firstRune(s string) (head, rest string, used int) {
	for i := range s {
		if i > 0 {
			return s[:i], s[i:], ansi.StringWidth(s[:i])
		}
	}
	return s, "", ansi.StringWidth(s)
}

// breakLine cuts a line kept as it is (code) into pieces of at most
// width cells.
func breakLine(s string, width int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for s != "" {
		head, rest, _ := cut(s, width)
		if head == "" {
			head, rest, _ = firstRune(s)
		}
		out = append(out, head)
		s = rest
	}
	return out
}
