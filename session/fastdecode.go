package session

import (
	"bytes"

	"github.com/reinhq/rein/llm"
)

// The commonest payloads are read directly from their data as this
// package writes it: compact JSON whose keys are the fields' tags. A
// reader gives up, leaving the data to encoding/json, at anything it does
// not expect: an unknown key, a null, whitespace, a number that is not a
// small non-negative integer, a lone surrogate, invalid UTF-8. What it
// accepts it decodes as encoding/json does (FuzzFastPayload checks it).

// fastPayload decodes data of type typ directly; ok is false when it
// gives up.
func fastPayload(typ string, data []byte) (p Payload, ok bool) {
	r := &reader{b: data}
	switch typ {
	case TypeStepStart:
		v := new(StepStart)
		p, ok = v, r.object(func(k []byte) bool { return string(k) == "step" && intTo(r, &v.Step) })
	case TypeStepEnd:
		p, ok = stepEnd(r)
	case TypeTurnStart:
		v := new(TurnStart)
		p, ok = v, r.object(func(k []byte) bool { return string(k) == "trigger" && r.strTo(&v.Trigger) })
	case TypeTurnEnd:
		p, ok = turnEnd(r)
	case TypeAssistantChunk:
		p, ok = assistantChunk(r)
	case TypeAssistantMessage:
		p, ok = assistantMessage(r)
	case TypeToolCall:
		p, ok = toolCall(r)
	case TypeToolResult:
		p, ok = toolResult(r)
	case TypeUserMessage:
		v := new(UserMessage)
		p, ok = v, r.object(func(k []byte) bool { return message(r, k, &v.Parts, &v.Source) })
	case TypeContextMessage:
		v := new(ContextMessage)
		p, ok = v, r.object(func(k []byte) bool { return message(r, k, &v.Parts, &v.Source) })
	case TypeSteeringMessage:
		v := new(SteeringMessage)
		p, ok = v, r.object(func(k []byte) bool { return message(r, k, &v.Parts, &v.Source) })
	default:
		return nil, false
	}
	return p, ok && r.i == len(data)
}

func message(r *reader, k []byte, parts *llm.PartList, source *string) bool {
	switch string(k) {
	case "parts":
		return r.partsTo(parts)
	case "source":
		return r.strTo(source)
	}
	return false
}

func stepEnd(r *reader) (*StepEnd, bool) {
	v := new(StepEnd)
	return v, r.object(func(k []byte) bool {
		switch string(k) {
		case "step":
			return intTo(r, &v.Step)
		case "usage":
			return r.usage(&v.Usage)
		case "finish":
			return r.strTo((*string)(&v.Finish))
		}
		return false
	})
}

func turnEnd(r *reader) (*TurnEnd, bool) {
	v := new(TurnEnd)
	return v, r.object(func(k []byte) bool {
		switch string(k) {
		case "reason":
			return r.strTo((*string)(&v.Reason))
		case "cause":
			return r.strTo(&v.Cause)
		case "message":
			return r.strTo(&v.Message)
		case "code":
			return r.strTo(&v.Code)
		}
		return false
	})
}

func assistantChunk(r *reader) (*AssistantChunk, bool) {
	v := new(AssistantChunk)
	return v, r.object(func(k []byte) bool {
		switch string(k) {
		case "step":
			return intTo(r, &v.Step)
		case "deltas":
			if v.Deltas != nil {
				return false // encoding/json would decode into the first list
			}
			v.Deltas = []ChunkDelta{}
			return r.array(func() bool {
				var d ChunkDelta
				v.Deltas = append(v.Deltas, d)
				return r.object(func(k []byte) bool { return chunkDelta(r, k, &v.Deltas[len(v.Deltas)-1]) })
			})
		}
		return false
	})
}

func chunkDelta(r *reader, k []byte, d *ChunkDelta) bool {
	switch string(k) {
	case "index":
		return intTo(r, &d.Index)
	case "kind":
		return r.strTo(&d.Kind)
	case "text":
		return r.strTo(&d.Text)
	case "id":
		return r.strTo((*string)(&d.ID))
	case "name":
		return r.strTo(&d.Name)
	}
	return false
}

func assistantMessage(r *reader) (*AssistantMessage, bool) {
	v := new(AssistantMessage)
	return v, r.object(func(k []byte) bool {
		switch string(k) {
		case "parts":
			return r.partsTo(&v.Parts)
		case "provenance":
			if v.Provenance != nil {
				return false // encoding/json would decode into the first
			}
			v.Provenance = new(llm.Provenance)
			return r.object(func(k []byte) bool {
				switch string(k) {
				case "provider":
					return r.strTo(&v.Provenance.Provider)
				case "model":
					return r.strTo(&v.Provenance.Model)
				case "state":
					return r.rawTo(&v.Provenance.State)
				}
				return false
			})
		case "usage":
			return r.usage(&v.Usage)
		case "finish":
			return r.strTo((*string)(&v.Finish))
		case "interrupted":
			return r.boolTo(&v.Interrupted)
		}
		return false
	})
}

func toolCall(r *reader) (*ToolCall, bool) {
	v := new(ToolCall)
	return v, r.object(func(k []byte) bool {
		switch string(k) {
		case "call_id":
			return r.strTo((*string)(&v.CallID))
		case "name":
			return r.strTo(&v.Name)
		case "args":
			return r.rawTo(&v.Args)
		case "origin":
			return r.strTo(&v.Origin)
		case "coerced":
			if v.Coerced != nil {
				return false
			}
			v.Coerced = []string{}
			return r.array(func() bool {
				v.Coerced = append(v.Coerced, "")
				return r.strTo(&v.Coerced[len(v.Coerced)-1])
			})
		}
		return false
	})
}

func toolResult(r *reader) (*ToolResult, bool) {
	v := new(ToolResult)
	return v, r.object(func(k []byte) bool {
		switch string(k) {
		case "call_id":
			return r.strTo((*string)(&v.CallID))
		case "name":
			return r.strTo(&v.Name)
		case "parts":
			return r.partsTo(&v.Parts)
		case "is_error":
			return r.boolTo(&v.IsError)
		case "code":
			return r.strTo(&v.Code)
		case "outcome":
			return r.strTo(&v.Outcome)
		case "duration":
			return intTo(r, &v.Duration)
		case "interrupted":
			return r.boolTo(&v.Interrupted)
		}
		return false
	})
}

// partsTo reads an array of parts; an empty one is nil, as
// llm.PartList decodes it.
func (r *reader) partsTo(l *llm.PartList) bool {
	*l = nil
	return r.array(func() bool {
		if r.i >= len(r.b) || r.b[r.i] != '{' {
			return false
		}
		n := valueLen(r.b[r.i:])
		p, ok := partOf(r.b[r.i : r.i+n])
		if ok {
			*l = append(*l, p)
			r.i += n
		}
		return ok
	})
}

var plainTextHead = []byte(`{"type":"` + (*llm.Text)(nil).PartType() + `","text":`)

// partOf decodes one part: a text part that holds only its text, the
// bulk of a log's bytes, directly; any other through llm.UnmarshalPart.
func partOf(elem []byte) (llm.Part, bool) {
	if body, ok := bytes.CutPrefix(elem, plainTextHead); ok {
		r := reader{b: body}
		if s, ok := r.str(); ok && r.i == len(body)-1 && body[r.i] == '}' {
			return &llm.Text{Text: s}, true
		}
	}
	if body, ok := bytes.CutPrefix(elem, toolCallHead); ok {
		r := reader{b: body}
		c := new(llm.ToolCall)
		if r.fields(func(k []byte) bool { return toolCallPart(&r, k, c) }) && r.i == len(body) {
			return c, true
		}
	}
	p, err := llm.UnmarshalPart(elem)
	return p, err == nil
}

var toolCallHead = []byte(`{"type":"` + (*llm.ToolCall)(nil).PartType() + `",`)

func toolCallPart(r *reader, k []byte, c *llm.ToolCall) bool {
	switch string(k) {
	case "id":
		return r.strTo((*string)(&c.ID))
	case "name":
		return r.strTo(&c.Name)
	case "args":
		return r.rawTo(&c.Args)
	}
	return false
}

func (r *reader) usage(u *llm.Usage) bool {
	return r.object(func(k []byte) bool {
		switch string(k) {
		case "input":
			return intTo(r, &u.Input)
		case "output":
			return intTo(r, &u.Output)
		case "reasoning":
			return intTo(r, &u.Reasoning)
		case "cache_read":
			return intTo(r, &u.CacheRead)
		case "cache_write":
			return intTo(r, &u.CacheWrite)
		case "cache_write_5m":
			return intTo(r, &u.CacheWrite5m)
		case "cache_write_1h":
			return intTo(r, &u.CacheWrite1h)
		}
		return false
	})
}
