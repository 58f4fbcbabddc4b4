package main

import (
	"bufio"
	"fmt"
	"io"
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

// textRenderer streams the answer's text to out and a line per tool call
// (name, short arguments, outcome, duration) to info.
type textRenderer struct {
	out, info io.Writer
	lastNL    bool // the last text written to out ended a line
	wroteText bool
	calls     map[llm.CallID]callLine
}

type callLine struct {
	name, args string
}

func newTextRenderer(out, info io.Writer) *textRenderer {
	return &textRenderer{out: out, info: info, lastNL: true, calls: map[llm.CallID]callLine{}}
}

func (r *textRenderer) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(r.out, s)
	r.wroteText = true
	r.lastNL = strings.HasSuffix(s, "\n")
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
				r.text(dl.Text)
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
		if r.wroteText {
			// Streamed text cannot be taken back: say it is not the answer,
			// and start the retry's text on a line of its own.
			r.endLine()
			r.wroteText = false
			fmt.Fprintln(r.info, "  the text above came from a failed attempt and was discarded (the log keeps only the retry)")
		}
		fmt.Fprintf(r.info, "  retrying after %s: %s (attempt %d)\n", d.Delay.Round(time.Millisecond), d.Kind, d.Attempt)
	case *session.Repair:
		fmt.Fprintf(r.info, "  repaired the log: %s\n", d.Kind)
	case *session.AssistantMessage:
		// With no streamed text (a provider that does not stream), print
		// the message's text whole.
		if !r.wroteText {
			for _, p := range d.Parts {
				if t, ok := p.(*llm.Text); ok {
					r.text(t.Text)
				}
			}
		}
		r.wroteText = false
		r.endLine()
	case *session.TurnEnd:
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
