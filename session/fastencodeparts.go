package session

import (
	"encoding/base64"
	"encoding/json"

	"github.com/reinhq/rein/internal/jsonesc"
	"github.com/reinhq/rein/llm"
)

// appendParts appends parts as llm.PartList.MarshalJSON writes them: an
// array, [] when nil, of objects that open with the part's "type".
func appendParts(b []byte, parts []llm.Part) ([]byte, bool) {
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendPart(b, p); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendPart appends one part as llm.MarshalPart writes it: the "type"
// spliced in front of the fields json.Marshal writes for the part. ok is
// false for a nil part, of which llm.MarshalPart writes no valid JSON.
func appendPart(b []byte, p llm.Part) ([]byte, bool) {
	switch p := p.(type) {
	case *llm.Text:
		if p != nil {
			b = keyStr(b, `{"type":"text","text":`, p.Text)
			return append(optCache(b, p.Cache), '}'), true
		}
	case *llm.Reasoning:
		if p != nil {
			b = append(b, `{"type":"reasoning"`...)
			b = optStr(b, `,"text":`, p.Text)
			b = optStr(b, `,"signature":`, p.Signature)
			b = optStr(b, `,"redacted":`, p.Redacted)
			return append(optCache(b, p.Cache), '}'), true
		}
	case *llm.ToolCall:
		if p != nil {
			return append(toolCallPart(b, p), '}'), true
		}
	case *llm.ToolResult:
		if p != nil {
			// The fields of the embedded struct llm.ToolResult.MarshalJSON
			// writes come first, then its parts.
			b = keyStr(b, `{"type":"tool_result","call_id":`, string(p.CallID))
			b = optTrue(b, `,"is_error":`, p.IsError)
			b = optCache(b, p.Cache)
			b, ok := appendParts(append(b, `,"parts":`...), p.Parts)
			return append(b, '}'), ok
		}
	case *llm.Image:
		if p != nil {
			b = media(b, `{"type":"image"`, p.MediaType, p.Data, p.URL)
			return append(optCache(b, p.Cache), '}'), true
		}
	case *llm.Document:
		if p != nil {
			b = media(b, `{"type":"document"`, p.MediaType, p.Data, p.URL)
			b = optStr(b, `,"title":`, p.Title)
			return append(optCache(b, p.Cache), '}'), true
		}
	}
	return b, false
}

// toolCallPart writes a call as llm.ToolCall.MarshalJSON does: arguments
// that are not valid JSON go, as a string, under "args_text" after the
// other fields.
func toolCallPart(b []byte, c *llm.ToolCall) []byte {
	b = keyStr(b, `{"type":"tool_call","id":`, string(c.ID))
	b = keyStr(b, `,"name":`, c.Name)
	valid := json.Valid(c.Args)
	if valid {
		b = jsonesc.AppendRaw(append(b, `,"args":`...), c.Args)
	}
	b = optCache(b, c.Cache)
	if !valid && len(c.Args) > 0 {
		b = keyStr(b, `,"args_text":`, string(c.Args))
	}
	return b
}

// media writes the fields an image and a document share, in the order
// they declare them.
func media(b []byte, head, mediaType string, data []byte, url string) []byte {
	b = optStr(append(b, head...), `,"media_type":`, mediaType)
	b = optBytes(b, `,"data":`, data)
	return optStr(b, `,"url":`, url)
}

// optCache writes a part's *llm.CacheHint, whose TTL is omitempty.
func optCache(b []byte, h *llm.CacheHint) []byte {
	if h == nil {
		return b
	}
	b = append(b, `,"cache":{`...)
	if h.TTL != 0 {
		b = keyInt(b, `"ttl":`, int64(h.TTL))
	}
	return append(b, '}')
}

// optBytes writes a []byte as encoding/json does: a base64 string.
func optBytes(b []byte, key string, data []byte) []byte {
	if len(data) == 0 {
		return b
	}
	b = base64.StdEncoding.AppendEncode(append(append(b, key...), '"'), data)
	return append(b, '"')
}
