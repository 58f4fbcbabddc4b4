package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/reinhq/rein/internal/jsonesc"
	"github.com/reinhq/rein/llm"
)

// encMsg is one message in the Messages API's wire form, encoded once: its
// content blocks, comma-separated, with the places a cache_control marker
// can go. Markers are not part of it; they are written when a body is
// assembled, so a moved breakpoint never re-encodes a message.
type encMsg struct {
	role   llm.Role
	buf    []byte
	blocks []encBlock
	hinted bool // a block carries an explicit cache hint
	// sorted: no tool result follows another block; results, others:
	// whether it has tool results and other blocks.
	sorted, results, others bool
}

// encBlock is one content block: buf[start:end] of its message.
type encBlock struct {
	start, end int
	cc         int // where its cache_control goes; -1 when it cannot carry one
	hint       *llm.CacheHint
	result     bool        // a tool_result, which leads its user turn
	inner      []innerSlot // explicitly hinted blocks inside a tool result
}

// innerSlot is a hinted block inside a tool result.
type innerSlot struct {
	at   int
	hint *llm.CacheHint
}

// keepsReasoning reports whether m's thinking is replayed: only to the
// provider that wrote it.
func keepsReasoning(m *llm.Message, provider string) bool {
	return m.Provenance == nil || m.Provenance.Provider == "" || m.Provenance.Provider == provider
}

// encodeMessage converts m to content blocks, dropping what the API would
// reject. A system message's blocks are its text sections.
func encodeMessage(m *llm.Message, provider string) (encMsg, error) {
	e := encMsg{role: m.Role, sorted: true}
	keep := keepsReasoning(m, provider)
	switch m.Role {
	case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
	default:
		return e, fmt.Errorf("has role %q; use user, assistant or system", m.Role)
	}
	e.buf = make([]byte, 0, sizeHint(m.Parts))
	e.blocks = make([]encBlock, 0, len(m.Parts))
	for _, part := range m.Parts {
		if m.Role == llm.RoleSystem {
			if t, ok := part.(*llm.Text); !ok || t.Text == "" {
				continue
			}
		}
		start := len(e.buf)
		if start > 0 {
			e.buf = append(e.buf, ',')
			start++
		}
		b := encBlock{start: start, cc: -1}
		var ok bool
		var err error
		e.buf, ok, err = appendBlock(e.buf, &b, part, m.Role, keep)
		if err != nil {
			return e, err
		}
		if !ok {
			e.buf = e.buf[:max(start-1, 0)]
			continue
		}
		b.end = len(e.buf)
		e.hinted = e.hinted || b.hint != nil || len(b.inner) > 0
		if b.result && e.others {
			e.sorted = false
		}
		e.results = e.results || b.result
		e.others = e.others || !b.result
		e.blocks = append(e.blocks, b)
	}
	return e, nil
}

// sizeHint guesses the encoded size of parts, so that a message's buffer
// is allocated once in the common case.
func sizeHint(parts []llm.Part) int {
	n := 0
	for _, p := range parts {
		n += 64
		switch x := p.(type) {
		case *llm.Text:
			n += len(x.Text) + len(x.Text)/8
		case *llm.ToolCall:
			n += len(x.ID) + len(x.Name) + len(x.Args)
		case *llm.Reasoning:
			n += len(x.Text) + len(x.Signature) + len(x.Redacted)
		case *llm.ToolResult:
			n += len(x.CallID) + sizeHint(x.Parts)
		}
	}
	return n
}

// appendBlock appends part as a content block; ok is false for a part that
// is deliberately not sent.
func appendBlock(buf []byte, b *encBlock, part llm.Part, role llm.Role, keepReasoning bool) (_ []byte, ok bool, err error) {
	switch x := part.(type) {
	case *llm.Text:
		if x.Text == "" {
			return buf, false, nil // the API rejects empty text blocks
		}
		buf, b.cc = appendText(buf, x.Text)
		b.hint = x.Cache
	case *llm.Reasoning:
		if role != llm.RoleAssistant || !keepReasoning {
			return buf, false, nil
		}
		// Thinking blocks cannot carry cache_control; the hint is dropped.
		switch {
		case x.Redacted != "":
			buf = append(buf, `{"data":`...)
			buf = jsonesc.AppendString(buf, x.Redacted)
			buf = append(buf, `,"type":"redacted_thinking"}`...)
		case x.Signature != "":
			buf = append(buf, `{"signature":`...)
			buf = jsonesc.AppendString(buf, x.Signature)
			buf = append(buf, `,"thinking":`...)
			buf = jsonesc.AppendString(buf, x.Text)
			buf = append(buf, `,"type":"thinking"}`...)
		default:
			// Unsigned thinking (from another provider, or cut off) would
			// be rejected.
			return buf, false, nil
		}
	case *llm.ToolCall:
		if role != llm.RoleAssistant {
			return buf, false, fmt.Errorf("tool call %q in a %s message; tool calls belong to assistant messages", x.ID, role)
		}
		buf = append(buf, `{"id":`...)
		buf = jsonesc.AppendString(buf, string(x.ID))
		buf = append(buf, `,"input":`...)
		buf = jsonesc.AppendRaw(buf, toolInput(x.Args))
		buf = append(buf, `,"name":`...)
		buf = jsonesc.AppendString(buf, x.Name)
		b.cc, b.hint = len(buf), x.Cache
		buf = append(buf, `,"type":"tool_use"}`...)
	case *llm.ToolResult:
		if role != llm.RoleUser {
			return buf, false, fmt.Errorf("tool result %q in a %s message; tool results ride user messages", x.CallID, role)
		}
		buf, err = appendResult(buf, b, x)
		if err != nil {
			return buf, false, err
		}
	case *llm.Image, *llm.Document:
		var cc int
		buf, cc, err = appendMedia(buf, part)
		if err != nil {
			return buf, false, err
		}
		b.cc, b.hint = cc, cacheOf(part)
	case nil:
		return buf, false, fmt.Errorf("nil part")
	default:
		return buf, false, fmt.Errorf("unsupported part type %T", part)
	}
	return buf, true, nil
}

// appendText appends a text block and returns where its cache_control goes.
func appendText(buf []byte, text string) ([]byte, int) {
	buf = append(buf, `{"text":`...)
	buf = jsonesc.AppendString(buf, text)
	cc := len(buf)
	return append(buf, `,"type":"text"}`...), cc
}

func appendResult(buf []byte, b *encBlock, x *llm.ToolResult) ([]byte, error) {
	b.result, b.hint = true, x.Cache
	buf = append(buf, `{"tool_use_id":`...)
	buf = jsonesc.AppendString(buf, string(x.CallID))
	if x.IsError {
		buf = append(buf, `,"is_error":true`...)
	}
	b.cc = len(buf)
	n := 0
	for _, inner := range x.Parts {
		mark := len(buf)
		if n == 0 {
			buf = append(buf, `,"content":[`...)
		} else {
			buf = append(buf, ',')
		}
		var cc int
		var err error
		switch p := inner.(type) {
		case *llm.Text:
			if p.Text == "" {
				buf = buf[:mark]
				continue
			}
			buf, cc = appendText(buf, p.Text)
		case *llm.Image, *llm.Document:
			buf, cc, err = appendMedia(buf, p)
			if err != nil {
				return buf, fmt.Errorf("tool result %q: %w", x.CallID, err)
			}
		default:
			// Reasoning, calls and results have no place inside a result.
			buf = buf[:mark]
			continue
		}
		if h := cacheOf(inner); h != nil {
			b.inner = append(b.inner, innerSlot{at: cc, hint: h})
		}
		n++
	}
	if n > 0 {
		buf = append(buf, ']')
	}
	return append(buf, `,"type":"tool_result"}`...), nil
}

func cacheOf(p llm.Part) *llm.CacheHint {
	switch x := p.(type) {
	case *llm.Text:
		return x.Cache
	case *llm.Image:
		return x.Cache
	case *llm.Document:
		return x.Cache
	}
	return nil
}

// appendMedia appends an image or document block and returns where its
// cache_control goes.
func appendMedia(buf []byte, p llm.Part) ([]byte, int, error) {
	switch x := p.(type) {
	case *llm.Image:
		buf = append(buf, `{"source":`...)
		buf, err := appendImageSource(buf, x)
		if err != nil {
			return buf, 0, err
		}
		cc := len(buf)
		return append(buf, `,"type":"image"}`...), cc, nil
	case *llm.Document:
		buf = append(buf, `{"source":`...)
		buf, err := appendDocumentSource(buf, x)
		if err != nil {
			return buf, 0, err
		}
		if x.Title != "" {
			buf = append(buf, `,"title":`...)
			buf = jsonesc.AppendString(buf, x.Title)
		}
		cc := len(buf)
		return append(buf, `,"type":"document"}`...), cc, nil
	}
	return buf, 0, fmt.Errorf("unsupported part type %T", p)
}

func appendImageSource(buf []byte, x *llm.Image) ([]byte, error) {
	switch {
	case len(x.Data) > 0:
		mt := x.MediaType
		if mt == "" {
			mt = http.DetectContentType(x.Data)
		}
		switch mt {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return buf, fmt.Errorf("image of type %q; the API takes image/jpeg, image/png, image/gif or image/webp", mt)
		}
		return appendBase64(buf, x.Data, mt), nil
	case x.URL != "":
		return appendURL(buf, x.URL), nil
	}
	return buf, fmt.Errorf("image has neither data nor URL")
}

func appendDocumentSource(buf []byte, x *llm.Document) ([]byte, error) {
	switch {
	case len(x.Data) > 0:
		mt := x.MediaType
		if mt == "" {
			mt = http.DetectContentType(x.Data)
		}
		switch {
		case mt == "application/pdf":
			return appendBase64(buf, x.Data, mt), nil
		case strings.HasPrefix(mt, "text/"):
			buf = append(buf, `{"data":`...)
			buf = jsonesc.AppendString(buf, string(x.Data))
			return append(buf, `,"media_type":"text/plain","type":"text"}`...), nil
		}
		return buf, fmt.Errorf("document of type %q; the API takes application/pdf or text", mt)
	case x.URL != "":
		return appendURL(buf, x.URL), nil
	}
	return buf, fmt.Errorf("document has neither data nor URL")
}

func appendBase64(buf, data []byte, mediaType string) []byte {
	buf = append(buf, `{"data":"`...)
	buf = base64.StdEncoding.AppendEncode(buf, data)
	buf = append(buf, `","media_type":`...)
	buf = jsonesc.AppendString(buf, mediaType)
	return append(buf, `,"type":"base64"}`...)
}

func appendURL(buf []byte, url string) []byte {
	buf = append(buf, `{"url":`...)
	buf = jsonesc.AppendString(buf, url)
	return append(buf, `,"type":"url"}`...)
}

// toolInput returns a tool call's arguments as the JSON object the API
// requires: empty arguments become {}, and so do arguments that are not a
// JSON object (a malformed call the model made earlier).
func toolInput(args json.RawMessage) []byte {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return []byte(`{}`)
	}
	return a
}
