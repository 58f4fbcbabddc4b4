package anthropic

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/reinhq/rein/internal/jsonesc"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// settings are the request's sampling fields, checked.
type settings struct {
	maxTokens int
	budget    int    // thinking budget; 0 for none
	schema    []byte // the response format's schema, encoded
}

func sampling(req *llm.Request, cfg buildConfig) (settings, error) {
	var s settings
	maxTokens := req.MaxTokens
	explicitMax := maxTokens > 0
	if !explicitMax {
		maxTokens = cfg.maxTokens
	}
	if req.Reasoning != nil {
		budget := req.Reasoning.BudgetTokens
		if budget == 0 {
			budget = effortBudgets[req.Reasoning.Effort]
		}
		if budget == 0 && req.Reasoning.Effort != "" {
			return s, fmt.Errorf("anthropic: unknown reasoning effort %q; use minimal, low, medium or high, or set BudgetTokens", req.Reasoning.Effort)
		}
		if budget > 0 {
			budget = max(budget, MinThinkingBudget)
			if budget >= maxTokens {
				if explicitMax {
					return s, fmt.Errorf("anthropic: thinking budget %d must be below max_tokens %d; raise MaxTokens or lower the budget", budget, maxTokens)
				}
				maxTokens = budget + cfg.maxTokens
			}
			s.budget = budget
		}
	}
	s.maxTokens = maxTokens
	for _, f := range []*float64{req.Temperature, req.TopP} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return s, fmt.Errorf("anthropic: sampling value %v is not a finite number; set Temperature and TopP to numbers", *f)
		}
	}
	if rf := req.ResponseFormat; rf != nil && len(rf.Schema) > 0 {
		// Through a map, as the SDK sends it: keys sorted.
		var schema map[string]any
		if err := json.Unmarshal(rf.Schema, &schema); err != nil || schema == nil {
			return s, fmt.Errorf("anthropic: response format schema is not a JSON object")
		}
		b, err := json.Marshal(schema)
		if err != nil {
			return s, fmt.Errorf("anthropic: response format schema: %w", err)
		}
		s.schema = b
	}
	return s, nil
}

// write assembles the body from the encoded parts and the placed marks.
func (b *body) write(s settings, count bool) (wirebody.Body, error) {
	c, req := b.c, b.req
	size := 256 + len(b.model) + 64*len(c.marks)
	if c.settled < len(c.turns) {
		for i := c.turns[c.settled].from; i < len(c.msgs); i++ {
			size += len(c.msgs[i].buf) + 32
		}
	}
	for i := range c.tools {
		size += len(c.tools[i].buf) + 2
	}
	for i := range c.system {
		size += len(c.system[i].buf) + 16
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	if !count {
		out = append(out, `"max_tokens":`...)
		out = strconv.AppendInt(out, int64(s.maxTokens), 10)
		out = append(out, ',')
	}
	out = append(out, `"messages":[`...)
	head := out[:len(out):len(out)]
	out = out[len(out):]
	for ti := c.settled; ti < len(c.turns); ti++ {
		if ti > 0 {
			out = append(out, ',')
		}
		out = c.appendTurn(out, ti)
	}
	out = append(out, `],"model":`...)
	out = jsonesc.AppendString(out, b.model)
	if !count && req.User != "" {
		out = append(out, `,"metadata":{"user_id":`...)
		out = jsonesc.AppendString(out, req.User)
		out = append(out, '}')
	}
	if s.schema != nil {
		out = append(out, `,"output_config":{"format":{"schema":`...)
		out = append(out, s.schema...)
		out = append(out, `,"type":"json_schema"}}`...)
	}
	if !count && len(req.Stop) > 0 {
		out = append(out, `,"stop_sequences":[`...)
		for i, st := range req.Stop {
			if i > 0 {
				out = append(out, ',')
			}
			out = jsonesc.AppendString(out, st)
		}
		out = append(out, ']')
	}
	out = c.appendSystem(out)
	if s.budget > 0 {
		out = append(out, `,"thinking":{"budget_tokens":`...)
		out = strconv.AppendInt(out, int64(s.budget), 10)
		out = append(out, `,"type":"enabled"}`...)
	}
	out = c.appendTools(out, req)
	if !count {
		out = appendExtras(out, req)
		out = append(out, `,"stream":true`...)
	}
	return wirebody.Body{Head: head, Shared: c.prefix[:len(c.prefix):len(c.prefix)], Tail: append(out, '}')}, nil
}

// appendExtras writes the sampling knobs the SDK has no fields for.
func appendExtras(out []byte, req *llm.Request) []byte {
	if req.Temperature != nil {
		out = append(out, `,"temperature":`...)
		out, _ = appendFloat(out, *req.Temperature) // checked in sampling
	}
	if req.TopP != nil {
		out = append(out, `,"top_p":`...)
		out, _ = appendFloat(out, *req.TopP)
	}
	if req.TopK != nil {
		out = append(out, `,"top_k":`...)
		out = strconv.AppendInt(out, int64(*req.TopK), 10)
	}
	return out
}

func (c *bodyCache) appendSystem(out []byte) []byte {
	if len(c.system) == 0 && len(c.sysMsgs) == 0 {
		return out
	}
	out = append(out, `,"system":[`...)
	k := 0
	for i := range c.system {
		if k > 0 {
			out = append(out, ',')
		}
		t := &c.system[i]
		out = c.appendMarked(out, t.buf, 0, len(t.buf), t.cc, segSystem, k, 0, nil)
		k++
	}
	for _, mi := range c.sysMsgs {
		e := &c.msgs[mi]
		for bi := range e.blocks {
			if k > 0 {
				out = append(out, ',')
			}
			bl := &e.blocks[bi]
			out = c.appendMarked(out, e.buf, bl.start, bl.end, bl.cc, segSystem, k, 0, nil)
			k++
		}
	}
	return append(out, ']')
}

func (c *bodyCache) appendTools(out []byte, req *llm.Request) []byte {
	if len(c.tools) == 0 {
		return out
	}
	out = appendToolChoice(out, req)
	out = append(out, `,"tools":[`...)
	for i := range c.tools {
		if i > 0 {
			out = append(out, ',')
		}
		t := &c.tools[i]
		out = c.appendMarked(out, t.buf, 0, len(t.buf), len(t.buf), segTools, i, 0, nil)
		out = append(out, '}')
	}
	return append(out, ']')
}

func appendToolChoice(out []byte, req *llm.Request) []byte {
	noParallel := req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	var kind string
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceNone:
		return append(out, `,"tool_choice":{"type":"none"}`...)
	case llm.ToolChoiceRequired:
		kind = "any"
	case llm.ToolChoiceTool:
		kind = "tool"
	default:
		if !noParallel {
			return out // auto is the API's default
		}
		kind = "auto"
	}
	out = append(out, `,"tool_choice":{`...)
	if kind == "tool" {
		out = append(out, `"name":`...)
		out = jsonesc.AppendString(out, req.ToolChoice.Name)
		out = append(out, ',')
	}
	if noParallel {
		out = append(out, `"disable_parallel_tool_use":true,`...)
	}
	out = append(out, `"type":"`...)
	out = append(out, kind...)
	return append(out, `"}`...)
}

// appendTurn writes turn ti: its messages' kept bytes, with the cache
// markers placed in it.
func (c *bodyCache) appendTurn(out []byte, ti int) []byte {
	t := c.turns[ti]
	out = append(out, `{"content":[`...)
	first := true
	if t.sorted && !c.marked(t.from, t.to) {
		for mi := t.from; mi < t.to; mi++ {
			if e := &c.msgs[mi]; e.role == t.role && len(e.blocks) > 0 {
				if !first {
					out = append(out, ',')
				}
				out = append(out, e.buf...)
				first = false
			}
		}
	} else {
		c.eachBlock(ti, func(mi, bi int) {
			if !first {
				out = append(out, ',')
			}
			e := &c.msgs[mi]
			b := &e.blocks[bi]
			out = c.appendMarked(out, e.buf, b.start, b.end, b.cc, segMessages, mi, bi, b.inner)
			first = false
		})
	}
	out = append(out, `],"role":`...)
	if t.role == llm.RoleUser {
		return append(out, `"user"}`...)
	}
	return append(out, `"assistant"}`...)
}

// marked reports whether a message in [from, to) carries a marker.
func (c *bodyCache) marked(from, to int) bool {
	for i := range c.marks {
		if m := &c.marks[i]; m.seg == segMessages && m.idx >= from && m.idx < to {
			return true
		}
	}
	return false
}

// appendMarked writes buf[start:end], the block at (seg, idx, block), with
// the markers placed on it: its own at cc, its inner slots' at theirs.
func (c *bodyCache) appendMarked(out, buf []byte, start, end, cc, seg, idx, block int, inner []innerSlot) []byte {
	at := start
	put := func(pos, in int) {
		for i := range c.marks {
			m := &c.marks[i]
			if m.seg == seg && m.idx == idx && m.block == block && m.inner == in {
				out = append(out, buf[at:pos]...)
				at = pos
				if m.ttl1h {
					out = append(out, `,"cache_control":{"ttl":"1h","type":"ephemeral"}`...)
				} else {
					out = append(out, `,"cache_control":{"type":"ephemeral"}`...)
				}
				return
			}
		}
	}
	if cc >= 0 {
		put(cc, -1)
	}
	for k := range inner {
		put(inner[k].at, k)
	}
	return append(out, buf[at:end]...)
}
