package llm

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Assembler folds a chunk stream into a Message, Usage and FinishReason.
// It tolerates delta-only streams (no BlockStart/BlockEnd), fills a missing
// tool-call id with a stable synthetic one, and ignores deltas for a block
// that has already ended. The zero value is ready to use; an Assembler is
// not safe for concurrent use.
type Assembler struct {
	// IDPrefix makes synthetic tool-call ids unique beyond one response;
	// callers that know the step set it. Ids are "call_<prefix>_<index>",
	// or "call_<hash>_<index>" with no prefix.
	IDPrefix string
	// Provenance is used when the stream's Finish carries none.
	Provenance *Provenance

	blocks   []*block
	spare    []*block // blocks of earlier responses, for a reused Assembler
	last     *block   // the block the previous chunk touched: most deltas hit it
	usage    Usage
	finish   FinishReason
	finished bool
	finProv  *Provenance
}

type block struct {
	index  int
	kind   BlockKind
	closed bool
	text   strings.Builder
	sig    string
	redact string
	id     CallID
	name   string
}

// Add folds one chunk in. It never fails: malformed sequences are repaired
// as described on Assembler.
func (a *Assembler) Add(c Chunk) {
	switch c := c.(type) {
	case *BlockStart:
		b := a.block(c.Index, c.Kind)
		if b == nil {
			return
		}
		if c.ID != "" {
			b.id = c.ID
		}
		if c.Name != "" {
			b.name = c.Name
		}
	case *TextDelta:
		if b := a.block(c.Index, BlockText); b != nil {
			b.text.WriteString(c.Text)
		}
	case *ReasoningDelta:
		if b := a.block(c.Index, BlockReasoning); b != nil {
			b.text.WriteString(c.Text)
			if c.Signature != "" {
				b.sig = c.Signature
			}
			if c.Redacted != "" {
				b.redact = c.Redacted
			}
		}
	case *ToolCallDelta:
		if b := a.block(c.Index, BlockToolCall); b != nil {
			if c.ID != "" {
				b.id = c.ID
			}
			if c.Name != "" {
				b.name = c.Name
			}
			b.text.WriteString(c.Args)
		}
	case *BlockEnd:
		if b := a.find(c.Index); b != nil {
			b.closed = true
		}
	case *UsageChunk:
		a.usage.Merge(c.Usage)
	case *Finish:
		a.finish = c.Reason
		a.finished = true
		if c.Provenance != nil {
			a.finProv = c.Provenance
		}
	}
}

// block returns the open block at index, creating it with kind when new,
// or nil when the block has ended (a straggler).
func (a *Assembler) block(index int, kind BlockKind) *block {
	b := a.find(index)
	if b == nil {
		if n := len(a.spare); n > 0 {
			b, a.spare = a.spare[n-1], a.spare[:n-1]
			*b = block{index: index, kind: kind}
		} else {
			b = &block{index: index, kind: kind}
		}
		a.blocks = append(a.blocks, b)
	}
	a.last = b
	if b.closed {
		return nil
	}
	return b
}

// find returns the block at index, or nil. Responses have few blocks, so
// a scan beats a map.
func (a *Assembler) find(index int) *block {
	if b := a.last; b != nil && b.index == index {
		return b
	}
	for _, b := range a.blocks {
		if b.index == index {
			return b
		}
	}
	return nil
}

// Reset empties the assembler for a new response, keeping IDPrefix and
// Provenance.
func (a *Assembler) Reset() {
	// The blocks are used again; the parts handed out keep their text.
	spare := append(a.spare, a.blocks...)
	*a = Assembler{IDPrefix: a.IDPrefix, Provenance: a.Provenance, blocks: a.blocks[:0], spare: spare}
}

// Finished reports whether a Finish chunk has arrived.
func (a *Assembler) Finished() bool { return a.finished }

// Usage returns the usage reported so far.
func (a *Assembler) Usage() Usage { return a.usage }

// FinishReason returns the reason from the Finish chunk, or FinishAborted
// when none arrived. A stop with tool calls is reported as FinishToolCalls.
func (a *Assembler) FinishReason() FinishReason {
	if !a.finished {
		return FinishAborted
	}
	if a.finish == FinishStop || a.finish == "" {
		for _, b := range a.blocks {
			if b.kind == BlockToolCall {
				return FinishToolCalls
			}
		}
		return FinishStop
	}
	return a.finish
}

// Message returns the assistant message assembled so far, every block
// taken as complete. Empty text and reasoning blocks are left out.
func (a *Assembler) Message() Message { return a.message(true) }

// Partial returns the message of an interrupted stream: text and reasoning
// are kept, tool calls are dropped whole, since none of them will run.
func (a *Assembler) Partial() Message { return a.message(false) }

// Response returns Message, Usage and FinishReason together.
func (a *Assembler) Response() *Response {
	return &Response{Message: a.Message(), Usage: a.usage, Finish: a.FinishReason()}
}

func (a *Assembler) message(withCalls bool) Message {
	m := Message{Role: RoleAssistant, Parts: make([]Part, 0, len(a.blocks))}
	m.Provenance = a.finProv
	if m.Provenance == nil {
		m.Provenance = a.Provenance
	}
	for _, b := range a.blocks {
		switch b.kind {
		case BlockText:
			if b.text.Len() > 0 {
				m.Parts = append(m.Parts, &Text{Text: b.text.String()})
			}
		case BlockReasoning:
			if b.text.Len() > 0 || b.sig != "" || b.redact != "" {
				m.Parts = append(m.Parts, &Reasoning{Text: b.text.String(), Signature: b.sig, Redacted: b.redact})
			}
		case BlockToolCall:
			if !withCalls {
				continue
			}
			if b.id == "" {
				b.id = a.syntheticID(b)
			}
			var args []byte
			if b.text.Len() > 0 {
				args = []byte(b.text.String())
			}
			m.Parts = append(m.Parts, &ToolCall{ID: b.id, Name: b.name, Args: args})
		}
	}
	return m
}

func (a *Assembler) syntheticID(b *block) CallID {
	prefix := a.IDPrefix
	if prefix == "" {
		h := fnv.New32a()
		h.Write([]byte(b.name))
		h.Write([]byte(b.text.String()))
		prefix = fmt.Sprintf("%08x", h.Sum32())
	}
	return CallID(fmt.Sprintf("call_%s_%d", prefix, b.index))
}
