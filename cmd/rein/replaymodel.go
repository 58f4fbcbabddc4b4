package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// replayModel is an llm.Model that answers each request with the next
// recorded assistant message, and reports a request whose history differs
// from the one the record answered.
type replayModel struct {
	responses []recordedResponse
	diverge   func(format string, args ...any)
	pace      time.Duration

	mu   sync.Mutex
	next int
}

func (m *replayModel) played() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Stream implements llm.Model.
func (m *replayModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		m.mu.Lock()
		i := m.next
		if i < len(m.responses) {
			m.next++
		}
		m.mu.Unlock()
		if i >= len(m.responses) {
			m.diverge("request %d: the record has no more model responses", i+1)
			yield(nil, &llm.ProviderError{Kind: llm.ErrInvalidRequest, Err: errors.New("replay: the recording has no more model responses")})
			return
		}
		rec := m.responses[i]
		if d := historyDiff(rec.history, req.Messages); d != "" {
			m.diverge("request %d: %s", i+1, d)
		}
		for _, c := range messageChunks(rec.msg, m.pace > 0) {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			if !yield(c, nil) {
				return
			}
			if _, ok := c.(*llm.TextDelta); ok && m.pace > 0 {
				select {
				case <-time.After(m.pace):
				case <-ctx.Done():
				}
			}
		}
	}
}

// messageChunks turns a recorded assistant message back into a stream;
// byWord splits text into a delta per word.
func messageChunks(m *session.AssistantMessage, byWord bool) []llm.Chunk {
	var out []llm.Chunk
	for i, p := range m.Parts {
		switch p := p.(type) {
		case *llm.Text:
			out = append(out, &llm.BlockStart{Index: i, Kind: llm.BlockText})
			if byWord {
				for w := range strings.SplitAfterSeq(p.Text, " ") {
					out = append(out, &llm.TextDelta{Index: i, Text: w})
				}
			} else {
				out = append(out, &llm.TextDelta{Index: i, Text: p.Text})
			}
			out = append(out, &llm.BlockEnd{Index: i})
		case *llm.Reasoning:
			out = append(out, &llm.BlockStart{Index: i, Kind: llm.BlockReasoning},
				&llm.ReasoningDelta{Index: i, Text: p.Text, Signature: p.Signature, Redacted: p.Redacted}, &llm.BlockEnd{Index: i})
		case *llm.ToolCall:
			out = append(out, &llm.BlockStart{Index: i, Kind: llm.BlockToolCall, ID: p.ID, Name: p.Name},
				&llm.ToolCallDelta{Index: i, Args: string(p.Args)}, &llm.BlockEnd{Index: i})
		}
	}
	finish := m.Finish
	if finish == "" {
		finish = llm.FinishStop
	}
	out = append(out, &llm.UsageChunk{Usage: m.Usage}, &llm.Finish{Reason: finish, Provenance: m.Provenance})
	return out
}

// historyDiff compares the shape of two histories: roles, texts, tool
// calls and which calls have results. Tool result contents are compared
// where the results are produced, so they are not compared twice.
func historyDiff(want, got []llm.Message) string {
	w, g := historyShape(want), historyShape(got)
	for i := 0; i < len(w) || i < len(g); i++ {
		switch {
		case i >= len(w):
			return fmt.Sprintf("the live request has an extra message: %s", shorten(g[i], 120))
		case i >= len(g):
			return fmt.Sprintf("the live request lacks a recorded message: %s", shorten(w[i], 120))
		case w[i] != g[i]:
			return fmt.Sprintf("message %d differs\n  recorded: %s\n  replayed: %s", i+1, shorten(w[i], 160), shorten(g[i], 160))
		}
	}
	return ""
}

func historyShape(msgs []llm.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		var b strings.Builder
		b.WriteString(string(m.Role))
		b.WriteString(":")
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				b.WriteString(" " + p.Text)
			case *llm.ToolCall:
				fmt.Fprintf(&b, " [call %s %s %s]", p.ID, p.Name, p.Args)
			case *llm.ToolResult:
				fmt.Fprintf(&b, " [result %s]", p.CallID)
			}
		}
		out = append(out, b.String())
	}
	return out
}
