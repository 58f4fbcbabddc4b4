package session

import (
	"bytes"
	"slices"

	"github.com/reinhq/rein/llm"
)

// Clone returns a deep copy of e: no slice, map or pointer of the copy is
// shared with e, so a store can keep one and hand out the other.
func (e Event) Clone() Event {
	e.Data = ClonePayload(e.Data)
	return e
}

// ClonePayload returns a deep copy of p. A nil p clones to nil.
func ClonePayload(p Payload) Payload {
	switch p := p.(type) {
	case nil:
		return nil
	case *TurnStart:
		c := *p
		return &c
	case *TurnEnd:
		c := *p
		return &c
	case *StepStart:
		c := *p
		return &c
	case *StepEnd:
		c := *p
		return &c
	case *UserMessage:
		c := *p
		c.Parts = cloneParts(p.Parts)
		return &c
	case *PromptBlocked:
		c := *p
		return &c
	case *ContextMessage:
		c := *p
		c.Parts = cloneParts(p.Parts)
		return &c
	case *SteeringMessage:
		c := *p
		c.Parts = cloneParts(p.Parts)
		return &c
	case *RequestHeader:
		c := *p
		c.Sampling = bytes.Clone(p.Sampling)
		if p.System != nil {
			c.System = make([]llm.Text, len(p.System))
			for i, t := range p.System {
				t.Cache = cloneHint(t.Cache)
				c.System[i] = t
			}
		}
		c.Tools = slices.Clone(p.Tools)
		return &c
	case *AssistantChunk:
		c := *p
		c.Deltas = slices.Clone(p.Deltas)
		return &c
	case *AssistantMessage:
		c := *p
		c.Parts = cloneParts(p.Parts)
		if p.Provenance != nil {
			pv := *p.Provenance
			pv.State = bytes.Clone(pv.State)
			c.Provenance = &pv
		}
		return &c
	case *ToolCall:
		c := *p
		c.Args = bytes.Clone(p.Args)
		c.Coerced = slices.Clone(p.Coerced)
		return &c
	case *ToolResult:
		c := *p
		c.Parts = cloneParts(p.Parts)
		return &c
	case *HookDecision:
		c := *p
		c.Detail = bytes.Clone(p.Detail)
		return &c
	case *Compaction:
		c := *p
		return &c
	case *TodoWrite:
		c := *p
		c.Items = slices.Clone(p.Items)
		return &c
	case *SessionMeta:
		c := *p
		return &c
	case *Repair:
		c := *p
		return &c
	case *Retry:
		c := *p
		return &c
	case *Fallback:
		c := *p
		return &c
	case *CacheDrift:
		c := *p
		c.Changed = slices.Clone(p.Changed)
		c.Detail = bytes.Clone(p.Detail)
		return &c
	case *MCPEvent:
		c := *p
		c.Detail = bytes.Clone(p.Detail)
		return &c
	case *CacheBreak:
		c := *p
		c.Changed = slices.Clone(p.Changed)
		c.Detail = bytes.Clone(p.Detail)
		return &c
	case *Unknown:
		c := *p
		c.Raw = bytes.Clone(p.Raw)
		return &c
	case *ToolProgress:
		c := *p
		return &c
	case *CompactionProgress:
		c := *p
		return &c
	case *Decision:
		return cloneDecision(p)
	}
	if c, ok := cloneSubagent(p); ok {
		return c
	}
	if c, ok := cloneDurable(p); ok {
		return c
	}
	// Unreachable: the payload set is sealed.
	return p
}

func cloneParts(ps []llm.Part) []llm.Part {
	if ps == nil {
		return nil
	}
	out := make([]llm.Part, len(ps))
	for i, p := range ps {
		out[i] = clonePart(p)
	}
	return out
}

func clonePart(p llm.Part) llm.Part {
	switch p := p.(type) {
	case *llm.Text:
		c := *p
		c.Cache = cloneHint(p.Cache)
		return &c
	case *llm.Reasoning:
		c := *p
		c.Cache = cloneHint(p.Cache)
		return &c
	case *llm.ToolCall:
		c := *p
		c.Args = bytes.Clone(p.Args)
		c.Cache = cloneHint(p.Cache)
		return &c
	case *llm.ToolResult:
		c := *p
		c.Parts = cloneParts(p.Parts)
		c.Cache = cloneHint(p.Cache)
		return &c
	case *llm.Image:
		c := *p
		c.Data = bytes.Clone(p.Data)
		c.Cache = cloneHint(p.Cache)
		return &c
	case *llm.Document:
		c := *p
		c.Data = bytes.Clone(p.Data)
		c.Cache = cloneHint(p.Cache)
		return &c
	}
	return p
}

func cloneHint(h *llm.CacheHint) *llm.CacheHint {
	if h == nil {
		return nil
	}
	c := *h
	return &c
}
