package session

import (
	"encoding/json"
	"strconv"

	"github.com/reinhq/rein/internal/jsonesc"
	"github.com/reinhq/rein/llm"
)

// The commonest payloads are written directly, with exactly the bytes
// json.Marshal writes for them (logs and the other stores hold those
// bytes): the fields in declaration order under their tags, empty ones
// left out where the tag says omitempty or omitzero, parts as
// llm.PartList writes them. An encoder declines, leaving the payload to
// encoding/json, at anything unusual: a nil payload or part, raw JSON
// that is not valid (json.Marshal fails on it). FuzzDirectEncode checks
// that what it writes is what json.Marshal writes.

// appendPayloadDirect appends the JSON of p, as json.Marshal(p) writes
// it, to dst. When ok is false it declined, and out is to be dropped.
func appendPayloadDirect(dst []byte, p Payload) (out []byte, ok bool) {
	switch p := p.(type) {
	case *TurnStart:
		if p != nil {
			return append(keyStr(dst, `{"trigger":`, p.Trigger), '}'), true
		}
	case *TurnEnd:
		if p != nil {
			return turnEndJSON(dst, p), true
		}
	case *StepStart:
		if p != nil {
			return append(keyInt(dst, `{"step":`, int64(p.Step)), '}'), true
		}
	case *StepEnd:
		if p != nil {
			return stepEndJSON(dst, p), true
		}
	case *UserMessage:
		if p != nil {
			return messageJSON(dst, p.Parts, p.Source)
		}
	case *ContextMessage:
		if p != nil {
			return messageJSON(dst, p.Parts, p.Source)
		}
	case *SteeringMessage:
		if p != nil {
			return messageJSON(dst, p.Parts, p.Source)
		}
	case *AssistantMessage:
		if p != nil {
			return assistantMessageJSON(dst, p)
		}
	case *ToolCall:
		if p != nil {
			return toolCallJSON(dst, p)
		}
	case *ToolResult:
		if p != nil {
			return toolResultJSON(dst, p)
		}
	case *RequestHeader:
		if p != nil {
			return requestHeaderJSON(dst, p)
		}
	}
	return dst, false
}

func turnEndJSON(b []byte, v *TurnEnd) []byte {
	b = keyStr(b, `{"reason":`, string(v.Reason))
	b = optStr(b, `,"cause":`, v.Cause)
	b = optStr(b, `,"message":`, v.Message)
	b = optStr(b, `,"code":`, v.Code)
	return append(b, '}')
}

func stepEndJSON(b []byte, v *StepEnd) []byte {
	b = keyInt(b, `{"step":`, int64(v.Step))
	b = optUsage(b, &v.Usage)
	b = optStr(b, `,"finish":`, string(v.Finish))
	return append(b, '}')
}

// messageJSON writes a user, context or steering message.
func messageJSON(b []byte, parts llm.PartList, source string) ([]byte, bool) {
	b, ok := appendParts(append(b, `{"parts":`...), parts)
	b = optStr(b, `,"source":`, source)
	return append(b, '}'), ok
}

func assistantMessageJSON(b []byte, v *AssistantMessage) ([]byte, bool) {
	b, ok := appendParts(append(b, `{"parts":`...), v.Parts)
	if !ok {
		return b, false
	}
	if pv := v.Provenance; pv != nil {
		b = keyStr(b, `,"provenance":{"provider":`, pv.Provider)
		b = keyStr(b, `,"model":`, pv.Model)
		if b, ok = optRaw(b, `,"state":`, pv.State); !ok {
			return b, false
		}
		b = append(b, '}')
	}
	b = optUsage(b, &v.Usage)
	b = optStr(b, `,"finish":`, string(v.Finish))
	b = optTrue(b, `,"interrupted":`, v.Interrupted)
	return append(b, '}'), true
}

func toolCallJSON(b []byte, v *ToolCall) ([]byte, bool) {
	b = keyStr(b, `{"call_id":`, string(v.CallID))
	b = keyStr(b, `,"name":`, v.Name)
	b, ok := optRaw(b, `,"args":`, v.Args)
	b = optStr(b, `,"origin":`, v.Origin)
	b = optStrs(b, `,"coerced":`, v.Coerced)
	return append(b, '}'), ok
}

func toolResultJSON(b []byte, v *ToolResult) ([]byte, bool) {
	b = keyStr(b, `{"call_id":`, string(v.CallID))
	b = optStr(b, `,"name":`, v.Name)
	b, ok := appendParts(append(b, `,"parts":`...), v.Parts)
	b = optTrue(b, `,"is_error":`, v.IsError)
	b = optStr(b, `,"code":`, v.Code)
	b = optStr(b, `,"outcome":`, v.Outcome)
	b = optInt(b, `,"duration":`, int64(v.Duration))
	b = optTrue(b, `,"interrupted":`, v.Interrupted)
	return append(b, '}'), ok
}

func requestHeaderJSON(b []byte, v *RequestHeader) ([]byte, bool) {
	b = keyStr(b, `{"provider":`, v.Provider)
	b = keyStr(b, `,"model":`, v.Model)
	b, ok := optRaw(b, `,"sampling":`, v.Sampling)
	if len(v.System) > 0 {
		// llm.Text without its "type": a plain struct here, not a part.
		b = append(b, `,"system":[`...)
		for i := range v.System {
			if i > 0 {
				b = append(b, ',')
			}
			b = keyStr(b, `{"text":`, v.System[i].Text)
			b = append(optCache(b, v.System[i].Cache), '}')
		}
		b = append(b, ']')
	}
	b = optStr(b, `,"system_hash":`, v.SystemHash)
	b = optStrs(b, `,"tools":`, v.Tools)
	b = optStr(b, `,"tools_hash":`, v.ToolsHash)
	b = keyStr(b, `,"reason":`, v.Reason)
	return append(b, '}'), ok
}

// The helpers below append one field; key carries the comma before it
// where there is one.

func keyStr(b []byte, key, s string) []byte {
	return jsonesc.AppendString(append(b, key...), s)
}

func optStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return keyStr(b, key, s)
}

func keyInt(b []byte, key string, n int64) []byte {
	return strconv.AppendInt(append(b, key...), n, 10)
}

func optInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return keyInt(b, key, n)
}

func optTrue(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

// optRaw writes a json.RawMessage; ok is false when it is not valid JSON,
// on which json.Marshal fails.
func optRaw(b []byte, key string, raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return b, true
	}
	if !json.Valid(raw) {
		return b, false
	}
	return jsonesc.AppendRaw(append(b, key...), raw), true
}

func optStrs(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(append(b, key...), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonesc.AppendString(b, s)
	}
	return append(b, ']')
}

// optUsage writes llm.Usage under `usage,omitzero`: each counter is
// omitempty in turn.
func optUsage(b []byte, u *llm.Usage) []byte {
	if *u == (llm.Usage{}) {
		return b
	}
	b = append(b, `,"usage":`...)
	start := len(b)
	b = optInt(b, `,"input":`, u.Input)
	b = optInt(b, `,"output":`, u.Output)
	b = optInt(b, `,"reasoning":`, u.Reasoning)
	b = optInt(b, `,"cache_read":`, u.CacheRead)
	b = optInt(b, `,"cache_write":`, u.CacheWrite)
	b = optInt(b, `,"cache_write_5m":`, u.CacheWrite5m)
	b = optInt(b, `,"cache_write_1h":`, u.CacheWrite1h)
	b[start] = '{' // a counter is set, so its comma is there to replace
	return append(b, '}')
}
