package session

import (
	"bytes"
	"time"

	"github.com/reinhq/rein/llm"
)

// The commonest payloads are read directly from their data as this
// package writes it: compact JSON whose keys are the fields' tags. A
// decoder gives up, leaving the data to encoding/json, at anything it
// does not expect: an unknown key, a null, whitespace, a number that is
// not a small non-negative integer, a lone surrogate, invalid UTF-8, a
// list or an object given twice. What it accepts it decodes as
// encoding/json does (FuzzFastPayload checks it).

// fastPayload decodes data of type typ directly, sharing tool names and
// call IDs with rc if it is not nil; ok is false when it gives up.
func fastPayload(typ string, data []byte, rc *recent) (p Payload, ok bool) {
	r := &reader{b: data, recent: rc}
	switch typ {
	case TypeStepStart:
		v := new(StepStart)
		for n := 0; r.field(&n); {
			switch string(r.key) {
			case "step":
				v.Step = int(r.int())
			default:
				r.fail()
			}
		}
		p = v
	case TypeStepEnd:
		p = stepEnd(r)
	case TypeTurnStart:
		v := new(TurnStart)
		for n := 0; r.field(&n); {
			switch string(r.key) {
			case "trigger":
				v.Trigger = r.word()
			default:
				r.fail()
			}
		}
		p = v
	case TypeTurnEnd:
		p = turnEnd(r)
	case TypeAssistantChunk:
		p = assistantChunk(r)
	case TypeAssistantMessage:
		p = assistantMessage(r)
	case TypeToolCall:
		p = toolCall(r)
	case TypeToolResult:
		p = toolResult(r)
	case TypeUserMessage:
		v := new(UserMessage)
		message(r, &v.Parts, &v.Source)
		p = v
	case TypeContextMessage:
		v := new(ContextMessage)
		message(r, &v.Parts, &v.Source)
		p = v
	case TypeSteeringMessage:
		v := new(SteeringMessage)
		message(r, &v.Parts, &v.Source)
		p = v
	default:
		return nil, false
	}
	return p, !r.bad && r.i == len(data)
}

func message(r *reader, parts *llm.PartList, source *string) {
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "parts":
			*parts = r.parts()
		case "source":
			*source = r.word()
		default:
			r.fail()
		}
	}
}

func stepEnd(r *reader) *StepEnd {
	v := new(StepEnd)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "step":
			v.Step = int(r.int())
		case "usage":
			r.usage(&v.Usage)
		case "finish":
			v.Finish = llm.FinishReason(r.word())
		default:
			r.fail()
		}
	}
	return v
}

func turnEnd(r *reader) *TurnEnd {
	v := new(TurnEnd)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "reason":
			v.Reason = EndReason(r.word())
		case "cause":
			v.Cause = r.str()
		case "message":
			v.Message = r.str()
		case "code":
			v.Code = r.str()
		default:
			r.fail()
		}
	}
	return v
}

func assistantChunk(r *reader) *AssistantChunk {
	v := new(AssistantChunk)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "step":
			v.Step = int(r.int())
		case "deltas":
			if v.Deltas != nil {
				r.fail() // encoding/json would decode into the first list
			}
			v.Deltas = []ChunkDelta{}
			for m := 0; r.elem(&m); {
				v.Deltas = append(v.Deltas, chunkDelta(r))
			}
		default:
			r.fail()
		}
	}
	return v
}

func chunkDelta(r *reader) (d ChunkDelta) {
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "index":
			d.Index = int(r.int())
		case "kind":
			d.Kind = r.word()
		case "text":
			d.Text = r.str()
		case "id":
			d.ID = llm.CallID(r.str())
		case "name":
			d.Name = r.str()
		default:
			r.fail()
		}
	}
	return d
}

func assistantMessage(r *reader) *AssistantMessage {
	v := new(AssistantMessage)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "parts":
			v.Parts = r.parts()
		case "provenance":
			if v.Provenance != nil {
				r.fail() // encoding/json would decode into the first
			}
			v.Provenance = provenance(r)
		case "usage":
			r.usage(&v.Usage)
		case "finish":
			v.Finish = llm.FinishReason(r.word())
		case "interrupted":
			v.Interrupted = r.bool()
		default:
			r.fail()
		}
	}
	return v
}

func provenance(r *reader) *llm.Provenance {
	p := new(llm.Provenance)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "provider":
			p.Provider = r.str()
		case "model":
			p.Model = r.str()
		case "state":
			p.State = r.raw()
		default:
			r.fail()
		}
	}
	return p
}

func toolCall(r *reader) *ToolCall {
	v := new(ToolCall)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "call_id":
			v.CallID = llm.CallID(r.shared())
		case "name":
			v.Name = r.shared()
		case "args":
			v.Args = r.raw()
		case "origin":
			v.Origin = r.str()
		case "coerced":
			if v.Coerced != nil {
				r.fail()
			}
			v.Coerced = []string{}
			for m := 0; r.elem(&m); {
				v.Coerced = append(v.Coerced, r.str())
			}
		default:
			r.fail()
		}
	}
	return v
}

func toolResult(r *reader) *ToolResult {
	v := new(ToolResult)
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "call_id":
			v.CallID = llm.CallID(r.shared())
		case "name":
			v.Name = r.shared()
		case "parts":
			v.Parts = r.parts()
		case "is_error":
			v.IsError = r.bool()
		case "code":
			v.Code = r.str()
		case "outcome":
			v.Outcome = r.word()
		case "duration":
			v.Duration = time.Duration(r.int())
		case "interrupted":
			v.Interrupted = r.bool()
		default:
			r.fail()
		}
	}
	return v
}

func (r *reader) usage(u *llm.Usage) {
	for n := 0; r.field(&n); {
		switch string(r.key) {
		case "input":
			u.Input = r.int()
		case "output":
			u.Output = r.int()
		case "reasoning":
			u.Reasoning = r.int()
		case "cache_read":
			u.CacheRead = r.int()
		case "cache_write":
			u.CacheWrite = r.int()
		case "cache_write_5m":
			u.CacheWrite5m = r.int()
		case "cache_write_1h":
			u.CacheWrite1h = r.int()
		default:
			r.fail()
		}
	}
}

// parts reads an array of parts; an empty one is nil, as llm.PartList
// decodes it.
func (r *reader) parts() llm.PartList {
	var l llm.PartList
	for n := 0; r.elem(&n); {
		if r.i >= len(r.b) || r.b[r.i] != '{' {
			r.fail()
			break
		}
		if t, size := textPart(r.b[r.i:]); t != nil {
			l = append(l, t)
			r.i += size
			continue
		}
		size := valueLen(r.b[r.i:])
		p, ok := partOf(r.b[r.i:r.i+size], r.recent)
		if !ok {
			r.fail()
			break
		}
		l = append(l, p)
		r.i += size
	}
	return l
}

// textPart reads a text part that holds only its text (the bulk of a
// log's bytes) from the start of b, and returns it and its length, or
// nil.
func textPart(b []byte) (*llm.Text, int) {
	body, ok := bytes.CutPrefix(b, textHead)
	if !ok {
		return nil, 0
	}
	r := reader{b: body}
	if s := r.str(); !r.bad && r.i < len(body) && body[r.i] == '}' {
		return &llm.Text{Text: s}, len(textHead) + r.i + 1
	}
	return nil, 0
}

var (
	textHead     = []byte(`{"type":"` + (*llm.Text)(nil).PartType() + `","text":`)
	toolCallHead = []byte(`{"type":"` + (*llm.ToolCall)(nil).PartType() + `"`)
)

// partOf decodes one part other than a plain text: a tool call
// directly, any other through llm.UnmarshalPart.
func partOf(elem []byte, rc *recent) (llm.Part, bool) {
	if body, ok := bytes.CutPrefix(elem, toolCallHead); ok {
		r := reader{b: body, recent: rc}
		c := new(llm.ToolCall)
		for n := 1; r.field(&n); { // the brace and the tag are behind
			switch string(r.key) {
			case "id":
				c.ID = llm.CallID(r.shared())
			case "name":
				c.Name = r.shared()
			case "args":
				c.Args = r.raw()
			default:
				r.fail()
			}
		}
		if !r.bad && r.i == len(body) {
			return c, true
		}
	}
	p, err := llm.UnmarshalPart(elem)
	return p, err == nil
}
