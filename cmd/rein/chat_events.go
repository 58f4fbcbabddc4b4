package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// Block kinds of the transcript.
const (
	blockUser = iota
	blockAssistant
	blockReasoning
	blockTool
	blockNotice
	blockError
	blockChild // a line of a subagent's progress
	blockBreak // ends a step's text; shows nothing
)

type block struct {
	kind int
	text string
	// done marks an assistant block whose message is complete: it is
	// rendered as Markdown, while a streaming one is wrapped as it comes.
	done bool
	// tool cards
	callID   llm.CallID
	name     string
	args     []byte
	status   string // running, ok, error, blocked, cancelled
	started  time.Time
	duration time.Duration

	// lines caches the rendering at width w with reasoning shown or not
	// and tool output expanded or not; nil after any change.
	lines  []string
	linesW int
	linesR bool
	linesX bool
	// md caches a streaming answer's whole paragraphs, the first mdCut
	// bytes of text, rendered at width mdW.
	md    []string
	mdCut int
	mdW   int
}

// apply folds one event into the transcript and the status totals.
func (m *chatModel) apply(ev session.Event) {
	switch d := ev.Data.(type) {
	case *session.UserMessage:
		if ev.Seq != 0 && !m.running {
			m.blocks = append(m.blocks, block{kind: blockUser, text: partsText(d.Parts)})
		}
	case *session.SteeringMessage:
		m.notice("steer delivered: " + shorten(partsText(d.Parts), 60))
	case *session.AssistantChunk:
		if ev.Seq == 0 {
			m.applyDeltas(d)
		}
	case *session.AssistantMessage:
		m.applyMessage(d)
	case *session.ToolCall:
		m.blocks = append(m.blocks, block{kind: blockTool, callID: d.CallID, name: d.Name, args: d.Args, status: "running", started: time.Now()})
	case *session.ToolResult:
		m.applyResult(d)
	case *session.Retry:
		m.notice(fmt.Sprintf("retrying in %s: %s", d.Delay.Round(time.Millisecond), d.Kind))
	case *session.TurnEnd:
		m.applyEnd(d)
	}
}

func (m *chatModel) applyDeltas(d *session.AssistantChunk) {
	for _, dl := range d.Deltas {
		switch dl.Kind {
		case "text":
			m.appendText(blockAssistant, dl.Text)
			m.stepText = true
		case "reasoning":
			m.appendText(blockReasoning, dl.Text)
		}
	}
}

func (m *chatModel) applyMessage(d *session.AssistantMessage) {
	if !m.stepText {
		for _, p := range d.Parts {
			switch p := p.(type) {
			case *llm.Text:
				m.appendText(blockAssistant, p.Text)
			case *llm.Reasoning:
				m.appendText(blockReasoning, p.Text)
			}
		}
	}
	m.stepText = false
	m.usage.Add(d.Usage)
	if d.Provenance != nil {
		m.cost += catalogCost(d.Provenance.Model, d.Usage)
	}
	if in := d.Usage.PromptTokens(); in > 0 {
		m.lastIn = in
	}
	// The step's text is whole: render it as Markdown from now on.
	for i := len(m.blocks) - 1; i >= 0 && m.blocks[i].kind != blockBreak; i-- {
		if b := &m.blocks[i]; b.kind == blockAssistant && !b.done {
			b.done, b.lines = true, nil
		}
	}
	// The next text starts a new block.
	m.blocks = append(m.blocks, block{kind: blockBreak})
}

func (m *chatModel) applyResult(d *session.ToolResult) {
	for i := len(m.blocks) - 1; i >= 0; i-- {
		b := &m.blocks[i]
		if b.kind != blockTool || b.callID != d.CallID {
			continue
		}
		b.duration = d.Duration
		b.status = "ok"
		b.text = resultText(d.Parts)
		switch {
		case d.Outcome == session.OutcomeGateBlock || strings.HasPrefix(b.text, "Blocked"):
			b.status = "blocked"
		case d.Outcome == session.OutcomeCancelled || d.Outcome == session.OutcomeInterrupted:
			b.status = "cancelled"
		case d.IsError:
			b.status = "error"
		}
		b.lines = nil
		return
	}
}

func (m *chatModel) applyEnd(d *session.TurnEnd) {
	switch d.Reason {
	case session.EndCompleted:
	case session.EndAborted:
		m.notice("turn cancelled")
	case session.EndError:
		m.fail("error: " + d.Message)
	default:
		msg := "turn ended: " + string(d.Reason)
		if d.Message != "" {
			msg += ": " + d.Message
		}
		m.notice(msg)
	}
}

// appendText extends the last block of kind, or starts one.
func (m *chatModel) appendText(kind int, s string) {
	if n := len(m.blocks); n > 0 && m.blocks[n-1].kind == kind && !m.blocks[n-1].done {
		m.blocks[n-1].text += s
		m.blocks[n-1].lines = nil
		return
	}
	m.blocks = append(m.blocks, block{kind: kind, text: s})
}
