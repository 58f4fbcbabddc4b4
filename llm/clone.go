package llm

import (
	"bytes"
	"slices"
)

// Clone returns a deep copy of r: no slice, pointer or part of the copy is
// shared with r, so either may be changed without affecting the other.
// A nil r clones to nil.
func (r *Request) Clone() *Request {
	if r == nil {
		return nil
	}
	c := *r
	c.System = cloneTexts(r.System)
	c.Messages = CloneMessages(r.Messages)
	if r.Tools != nil {
		c.Tools = make([]ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.Schema = bytes.Clone(t.Schema)
			t.Cache = cloneHint(t.Cache)
			c.Tools[i] = t
		}
	}
	c.ParallelToolCalls = clonePtr(r.ParallelToolCalls)
	c.Temperature = clonePtr(r.Temperature)
	c.TopP = clonePtr(r.TopP)
	c.TopK = clonePtr(r.TopK)
	c.Stop = slices.Clone(r.Stop)
	c.Seed = clonePtr(r.Seed)
	c.PresencePenalty = clonePtr(r.PresencePenalty)
	c.FrequencyPenalty = clonePtr(r.FrequencyPenalty)
	c.Reasoning = clonePtr(r.Reasoning)
	if r.ResponseFormat != nil {
		f := *r.ResponseFormat
		f.Schema = bytes.Clone(f.Schema)
		c.ResponseFormat = &f
	}
	c.Cache = cloneHint(r.Cache)
	return &c
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	c := Message{Role: m.Role, Parts: CloneParts(m.Parts)}
	if m.Provenance != nil {
		p := *m.Provenance
		p.State = bytes.Clone(p.State)
		c.Provenance = &p
	}
	return c
}

// CloneMessages returns a deep copy of msgs; nil stays nil.
func CloneMessages(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}

// CloneParts returns a deep copy of parts; nil stays nil.
func CloneParts(parts []Part) []Part {
	if parts == nil {
		return nil
	}
	out := make([]Part, len(parts))
	for i, p := range parts {
		out[i] = ClonePart(p)
	}
	return out
}

// ClonePart returns a deep copy of p; nil stays nil.
func ClonePart(p Part) Part {
	switch p := p.(type) {
	case *Text:
		c := *p
		c.Cache = cloneHint(p.Cache)
		return &c
	case *Reasoning:
		c := *p
		c.Cache = cloneHint(p.Cache)
		return &c
	case *ToolCall:
		c := *p
		c.Args = bytes.Clone(p.Args)
		c.Cache = cloneHint(p.Cache)
		return &c
	case *ToolResult:
		c := *p
		c.Parts = CloneParts(p.Parts)
		c.Cache = cloneHint(p.Cache)
		return &c
	case *Image:
		c := *p
		c.Data = bytes.Clone(p.Data)
		c.Cache = cloneHint(p.Cache)
		return &c
	case *Document:
		c := *p
		c.Data = bytes.Clone(p.Data)
		c.Cache = cloneHint(p.Cache)
		return &c
	}
	return nil
}

func cloneTexts(ts []Text) []Text {
	if ts == nil {
		return nil
	}
	out := make([]Text, len(ts))
	for i, t := range ts {
		t.Cache = cloneHint(t.Cache)
		out[i] = t
	}
	return out
}

func cloneHint(h *CacheHint) *CacheHint { return clonePtr(h) }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
