package llm

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Role says who speaks a Message.
type Role string

// The roles of a conversation. Tool results ride a user message.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// CallID identifies one tool call and pairs it with its result.
type CallID string

// CacheHint asks a provider to end a cacheable prefix at the part that
// carries it. A zero TTL means the provider's default (five minutes for
// Anthropic). Providers without explicit cache control ignore it.
type CacheHint struct {
	TTL time.Duration `json:"ttl,omitempty"`
}

// Part is one piece of a Message: *Text, *Reasoning, *ToolCall,
// *ToolResult, *Image or *Document. The set is closed.
type Part interface {
	isPart()
	// PartType is the part's "type" tag in JSON.
	PartType() string
}

// Text is plain text.
type Text struct {
	Text  string     `json:"text"`
	Cache *CacheHint `json:"cache,omitempty"`
}

// Reasoning is a model's thinking, kept apart from its answer. Signature
// (Anthropic) or Redacted (opaque, encrypted thinking) must be sent back
// unchanged on the next request for the provider to accept the history.
type Reasoning struct {
	Text      string     `json:"text,omitempty"`
	Signature string     `json:"signature,omitempty"`
	Redacted  string     `json:"redacted,omitempty"`
	Cache     *CacheHint `json:"cache,omitempty"`
}

// ToolCall is the model asking for a tool to run. Args is the raw JSON the
// model produced; it may be malformed, and empty means {}.
type ToolCall struct {
	ID    CallID          `json:"id"`
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args,omitempty"`
	Cache *CacheHint      `json:"cache,omitempty"`
}

// ToolResult answers the ToolCall with the same ID.
type ToolResult struct {
	CallID  CallID     `json:"call_id"`
	Parts   []Part     `json:"-"`
	IsError bool       `json:"is_error,omitempty"`
	Cache   *CacheHint `json:"cache,omitempty"`
}

// Image is a picture, inline (Data with MediaType) or by URL.
type Image struct {
	MediaType string     `json:"media_type,omitempty"`
	Data      []byte     `json:"data,omitempty"`
	URL       string     `json:"url,omitempty"`
	Cache     *CacheHint `json:"cache,omitempty"`
}

// Document is a file such as a PDF, inline (Data with MediaType) or by URL.
type Document struct {
	MediaType string     `json:"media_type,omitempty"`
	Data      []byte     `json:"data,omitempty"`
	URL       string     `json:"url,omitempty"`
	Title     string     `json:"title,omitempty"`
	Cache     *CacheHint `json:"cache,omitempty"`
}

func (*Text) isPart()       {}
func (*Reasoning) isPart()  {}
func (*ToolCall) isPart()   {}
func (*ToolResult) isPart() {}
func (*Image) isPart()      {}
func (*Document) isPart()   {}

// PartType returns "text".
func (*Text) PartType() string { return "text" }

// PartType returns "reasoning".
func (*Reasoning) PartType() string { return "reasoning" }

// PartType returns "tool_call".
func (*ToolCall) PartType() string { return "tool_call" }

// PartType returns "tool_result".
func (*ToolResult) PartType() string { return "tool_result" }

// PartType returns "image".
func (*Image) PartType() string { return "image" }

// PartType returns "document".
func (*Document) PartType() string { return "document" }

// Provenance says which provider and model produced an assistant message.
// State is opaque adapter data needed to replay the response to the same
// provider (for example OpenAI reasoning item ids); other providers ignore it.
type Provenance struct {
	Provider string          `json:"provider"`
	Model    string          `json:"model"`
	State    json.RawMessage `json:"state,omitempty"`
}

// Message is a role plus parts.
type Message struct {
	Role       Role        `json:"role"`
	Parts      []Part      `json:"parts"`
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Text concatenates the message's Text parts.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(*Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the message's tool calls in order.
func (m Message) ToolCalls() []*ToolCall {
	var calls []*ToolCall
	for _, p := range m.Parts {
		if c, ok := p.(*ToolCall); ok {
			calls = append(calls, c)
		}
	}
	return calls
}

// UserText returns a user message holding one Text part.
func UserText(s string) Message {
	return Message{Role: RoleUser, Parts: []Part{&Text{Text: s}}}
}

// MarshalJSON encodes the message with each part tagged by its "type".
func (m Message) MarshalJSON() ([]byte, error) {
	type wire struct {
		Role       Role        `json:"role"`
		Parts      PartList    `json:"parts"`
		Provenance *Provenance `json:"provenance,omitempty"`
	}
	return json.Marshal(wire{m.Role, PartList(m.Parts), m.Provenance})
}

// UnmarshalJSON decodes a message written by MarshalJSON.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w struct {
		Role       Role        `json:"role"`
		Parts      PartList    `json:"parts"`
		Provenance *Provenance `json:"provenance,omitempty"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, Parts: []Part(w.Parts), Provenance: w.Provenance}
	return nil
}

// MarshalJSON encodes the result with its nested parts tagged by "type".
func (r ToolResult) MarshalJSON() ([]byte, error) {
	type plain ToolResult
	return json.Marshal(struct {
		plain
		Parts PartList `json:"parts"`
	}{plain(r), PartList(r.Parts)})
}

// UnmarshalJSON decodes a result written by MarshalJSON.
func (r *ToolResult) UnmarshalJSON(b []byte) error {
	type plain ToolResult
	var w struct {
		plain
		Parts PartList `json:"parts"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ToolResult(w.plain)
	r.Parts = []Part(w.Parts)
	return nil
}

// MarshalJSON encodes the call. Arguments that are valid JSON are kept
// as they are under "args"; arguments a model produced that are not JSON
// are kept verbatim as a string under "args_text", so a malformed call can
// still be logged and replayed.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	if len(c.Args) == 0 || json.Valid(c.Args) {
		return json.Marshal(plain(c))
	}
	text := string(c.Args)
	c.Args = nil
	return json.Marshal(struct {
		plain
		ArgsText string `json:"args_text"`
	}{plain(c), text})
}

// UnmarshalJSON decodes a call written by MarshalJSON.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	type plain ToolCall
	var w struct {
		plain
		ArgsText *string `json:"args_text"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = ToolCall(w.plain)
	if w.ArgsText != nil {
		c.Args = json.RawMessage(*w.ArgsText)
	}
	return nil
}

// MarshalPart encodes one part as a JSON object with a "type" tag.
func MarshalPart(p Part) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("llm: marshal part: nil part")
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	// Splice the tag in front of the part's own fields.
	tag := `{"type":"` + p.PartType() + `"`
	if len(body) <= 2 { // "{}"
		return []byte(tag + "}"), nil
	}
	out := make([]byte, 0, len(tag)+len(body))
	out = append(out, tag...)
	out = append(out, ',')
	return append(out, body[1:]...), nil
}

// UnmarshalPart decodes a part written by MarshalPart.
func UnmarshalPart(b []byte) (Part, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("llm: unmarshal part: %w", err)
	}
	var p Part
	switch head.Type {
	case "text":
		p = new(Text)
	case "reasoning":
		p = new(Reasoning)
	case "tool_call":
		p = new(ToolCall)
	case "tool_result":
		p = new(ToolResult)
	case "image":
		p = new(Image)
	case "document":
		p = new(Document)
	default:
		return nil, fmt.Errorf("llm: unmarshal part: unknown type %q", head.Type)
	}
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("llm: unmarshal %s part: %w", head.Type, err)
	}
	return p, nil
}

// PartList is a list of parts that keeps each part's "type" tag through
// encoding/json; use it as the field type of a struct that carries parts.
// An empty list decodes to nil.
type PartList []Part

// MarshalJSON encodes the parts as a JSON array of tagged objects.
func (l PartList) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 0, 64*len(l)+2)
	buf = append(buf, '[')
	for i, p := range l {
		if i > 0 {
			buf = append(buf, ',')
		}
		b, err := MarshalPart(p)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, ']'), nil
}

// UnmarshalJSON decodes an array written by MarshalJSON.
func (l *PartList) UnmarshalJSON(b []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return err
	}
	if len(raws) == 0 {
		*l = nil
		return nil
	}
	out := make([]Part, 0, len(raws))
	for _, r := range raws {
		p, err := UnmarshalPart(r)
		if err != nil {
			return err
		}
		out = append(out, p)
	}
	*l = out
	return nil
}
