package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// renderer shows a turn's events as they happen.
type renderer interface {
	event(ev session.Event)
	flush()
}

// jsonRenderer prints every logged event as one NDJSON line, in the
// session codec's exact shape, as soon as it is recorded. Transient
// stream deltas (seq 0), which are not part of the log, become
// "text.delta" lines; a "result" line ends the output.
type jsonRenderer struct {
	w     *bufio.Writer
	buf   []byte
	tally tally
	last  *session.AssistantMessage
}

func (r *jsonRenderer) event(ev session.Event) {
	if ev.Seq == 0 {
		r.delta(ev)
		return
	}
	r.tally.add(ev)
	if am, ok := ev.Data.(*session.AssistantMessage); ok {
		r.last = am
	}
	b, err := session.AppendEventJSON(r.buf[:0], ev)
	if err != nil {
		return
	}
	r.buf = append(b, '\n')
	r.w.Write(r.buf)
	r.w.Flush()
}

func (r *jsonRenderer) flush() { r.w.Flush() }

// textRenderer writes the answer's text to out and a line per tool call
// (name, short arguments, outcome, duration) to info. The text streams on
// a terminal and is printed when recorded elsewhere (see attempt).
type textRenderer struct {
	out, info io.Writer
	lastNL    bool // the last text written to out ended a line
	att       *attempt
	calls     map[llm.CallID]callLine
}

type callLine struct {
	name, args string
}

// newTextRenderer renders to out and info; tty, when out is a terminal,
// is the file behind it (nil: not a terminal).
func newTextRenderer(out, info io.Writer, tty *os.File) *textRenderer {
	return &textRenderer{out: out, info: info, lastNL: true, att: newAttempt(tty), calls: map[llm.CallID]callLine{}}
}

func (r *textRenderer) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(r.out, s)
	r.lastNL = strings.HasSuffix(s, "\n")
}

// discard drops the text of a failed attempt, with a note on info: the
// terminal's copy is erased when it is still on the screen.
func (r *textRenderer) discard() {
	if !r.att.shown() {
		return
	}
	switch {
	case !r.att.live():
		fmt.Fprintln(r.info, "  a failed attempt's text was held back and discarded (the log keeps only the retry)")
	case r.att.erase(r.out):
		r.lastNL = true
		fmt.Fprintln(r.info, "  a failed attempt's text was erased and discarded (the log keeps only the retry)")
	default:
		r.endLine()
		fmt.Fprintln(r.info, "  the text above came from a failed attempt and was discarded (the log keeps only the retry)")
	}
	r.att.confirm()
}

func (r *textRenderer) endLine() {
	if !r.lastNL {
		io.WriteString(r.out, "\n")
		r.lastNL = true
	}
}

func (r *textRenderer) event(ev session.Event) {
	switch d := ev.Data.(type) {
	case *session.AssistantChunk:
		if ev.Seq != 0 {
			return
		}
		for _, dl := range d.Deltas {
			if dl.Kind == "text" {
				r.att.streamed(dl.Text)
				if r.att.live() {
					r.text(dl.Text)
				}
			}
		}
	case *session.ToolCall:
		r.endLine()
		r.calls[d.CallID] = callLine{name: d.Name, args: shortArgs(d.Args)}
		fmt.Fprintf(r.info, "→ %s %s\n", d.Name, shortArgs(d.Args))
	case *session.ToolResult:
		c := r.calls[d.CallID]
		if c.name == "" {
			c.name = d.Name
		}
		outcome := "ok"
		switch {
		case d.Outcome != "" && d.Outcome != session.OutcomeExecute:
			outcome = d.Outcome
			if t := firstLine(resultText(d.Parts)); t != "" {
				outcome += ": " + t
			}
		case d.IsError:
			outcome = "error"
			if t := firstLine(resultText(d.Parts)); t != "" {
				outcome += ": " + t
			}
		}
		fmt.Fprintf(r.info, "  %s %s (%s)\n", c.name, shorten(outcome, 100), d.Duration.Round(time.Millisecond))
	case *session.Retry:
		r.discard()
		fmt.Fprintf(r.info, "  retrying after %s: %s (attempt %d)\n", d.Delay.Round(time.Millisecond), d.Kind, d.Attempt)
	case *session.Repair:
		fmt.Fprintf(r.info, "  repaired the log: %s\n", d.Kind)
	case *session.AssistantMessage:
		// The recorded answer: print it whole unless it streamed live.
		if !r.att.live() || !r.att.shown() {
			for _, p := range d.Parts {
				if t, ok := p.(*llm.Text); ok {
					r.text(t.Text)
				}
			}
		}
		r.att.confirm()
		r.endLine()
	case *session.TurnEnd:
		// Text the log never recorded came from an attempt that failed.
		r.discard()
		r.endLine()
	}
}

func (r *textRenderer) flush() { r.endLine() }

// shortArgs renders tool arguments on one short line.
func shortArgs(b []byte) string { return shorten(jsonUnescaper.Replace(string(b)), 80) }

// jsonUnescaper undoes the HTML-safe escapes of encoding/json for display.
var jsonUnescaper = strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">")

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// resultText joins the text parts of a tool result.
func resultText(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
