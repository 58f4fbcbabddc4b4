package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// ErrUnsupported is returned when a request holds something the chosen API
// cannot carry, such as a document by URL in Chat Completions.
var ErrUnsupported = errors.New("openai: unsupported content")

// The Chat Completions request body. Only what rein sends is declared.
// Model and messages lead the body and are written apart: the body is the
// messages array spliced between them and the rest.
type chatRequest struct {
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	TopK                *int            `json:"top_k,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	ResponseFormat      *chatRespFormat `json:"response_format,omitempty"`
	User                string          `json:"user,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role             string         `json:"role"`
	Content          any            `json:"content,omitempty"` // string or []chatContent
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type chatContent struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
	File     *chatFile     `json:"file,omitempty"`
}

type chatImageURL struct {
	URL string `json:"url"`
}

type chatFile struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict,omitempty"`
}

type chatRespFormat struct {
	Type       string          `json:"type"`
	JSONSchema *chatJSONSchema `json:"json_schema,omitempty"`
}

type chatJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// emptySchema stands in for a tool with no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// RequestBody returns the JSON body Stream would send for req. It is
// exported for golden tests and debugging; it never includes the key.
func (c *Chat) RequestBody(req *llm.Request) ([]byte, error) {
	b, err := c.cfg.chatBody(new(itemCache), req)
	return b.Bytes(), err
}

func (c *config) chatBody(ic *itemCache, req *llm.Request) (wirebody.Body, error) {
	var none wirebody.Body
	if req == nil {
		return none, errors.New("openai: nil request")
	}
	out := chatRequest{
		Stream:           true,
		Temperature:      req.Temperature,
		TopP:             req.TopP,
		Stop:             req.Stop,
		Seed:             req.Seed,
		PresencePenalty:  req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty,
		User:             req.User,
	}
	if !c.compat.NoStreamUsage {
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if c.compat.TopK {
		out.TopK = req.TopK
	}
	if req.MaxTokens > 0 {
		if c.compat.MaxTokensField == "max_tokens" {
			out.MaxTokens = req.MaxTokens
		} else {
			out.MaxCompletionTokens = req.MaxTokens
		}
	}
	if req.Reasoning != nil {
		out.ReasoningEffort = req.Reasoning.Effort
	}
	if rf := req.ResponseFormat; rf != nil {
		out.ResponseFormat = &chatRespFormat{Type: "json_schema", JSONSchema: &chatJSONSchema{
			Name: firstNonEmpty(rf.Name, "response"), Schema: schemaOr(rf.Schema), Strict: rf.Strict,
		}}
	}
	if len(req.Tools) > 0 {
		out.Tools = make([]chatTool, len(req.Tools))
		for i, t := range req.Tools {
			out.Tools[i] = chatTool{Type: "function", Function: chatToolDef{
				Name: t.Name, Description: t.Description, Parameters: schemaOr(t.Schema), Strict: c.strict,
			}}
		}
		out.ParallelToolCalls = req.ParallelToolCalls
		switch req.ToolChoice.Mode {
		case llm.ToolChoiceAuto:
		case llm.ToolChoiceRequired, llm.ToolChoiceNone:
			out.ToolChoice = string(req.ToolChoice.Mode)
		case llm.ToolChoiceTool:
			if req.ToolChoice.Name == "" {
				return none, errors.New("openai: tool choice \"tool\" needs ToolChoice.Name")
			}
			out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Name}}
		default:
			return none, fmt.Errorf("openai: unknown tool choice mode %q; use auto, required, none or tool", req.ToolChoice.Mode)
		}
	}

	head, err := c.chatHead(req)
	if err != nil {
		return none, err
	}
	var scratch []chatMessage
	items, err := ic.update(req.Messages, func(w *itemWriter, m *llm.Message) (err error) {
		scratch, err = encodeItems(w, m, scratch, c.appendChatMessage)
		return err
	})
	if err != nil {
		return none, err
	}
	return assemble(head, items, len(req.System) > 0, out)
}

// chatHead returns the body up to the conversation's messages: the model
// and the system message.
func (c *config) chatHead(req *llm.Request) ([]byte, error) {
	model, err := marshal(req.Model)
	if err != nil {
		return nil, err
	}
	head := append(append([]byte(`{"model":`), model...), `,"messages":[`...)
	if len(req.System) > 0 {
		role := "system"
		if c.compat.DeveloperRole {
			role = "developer"
		}
		sys, err := marshal(chatMessage{Role: role, Content: joinSystem(req.System)})
		if err != nil {
			return nil, err
		}
		head = append(head, sys...)
	}
	return head, nil
}

// marshal encodes without HTML escaping, so "<" in a prompt stays "<".
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func joinSystem(sections []llm.Text) string {
	if len(sections) == 1 {
		return sections[0].Text
	}
	parts := make([]string, len(sections))
	for i, s := range sections {
		parts[i] = s.Text
	}
	return strings.Join(parts, "\n\n")
}

func schemaOr(s json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(s)) == 0 {
		return emptySchema
	}
	return s
}

func (c *config) appendChatMessage(out []chatMessage, m *llm.Message) ([]chatMessage, error) {
	switch m.Role {
	case llm.RoleSystem:
		role := "system"
		if c.compat.DeveloperRole {
			role = "developer"
		}
		return append(out, chatMessage{Role: role, Content: textOf(m.Parts)}), nil
	case llm.RoleAssistant:
		am := chatMessage{Role: "assistant"}
		var text strings.Builder
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				text.WriteString(p.Text)
			case *llm.Reasoning:
				if c.compat.SendReasoning {
					am.ReasoningContent += p.Text
				}
			case *llm.ToolCall:
				am.ToolCalls = append(am.ToolCalls, chatToolCall{ID: string(p.ID), Type: "function",
					Function: chatFunction{Name: p.Name, Arguments: argsOr(p.Args)}})
			}
		}
		if text.Len() > 0 {
			am.Content = text.String()
		} else if len(am.ToolCalls) == 0 {
			am.Content = "" // an empty answer still needs content
		}
		return append(out, am), nil
	case llm.RoleUser, "":
		// Tool results go first, one "tool" message each, because they
		// must follow the assistant's calls directly; everything else,
		// including pictures a tool returned, follows as one user message.
		var rest []chatContent
		for _, p := range m.Parts {
			tr, ok := p.(*llm.ToolResult)
			if !ok {
				continue
			}
			text, media, err := splitResult(tr, chatPart)
			if err != nil {
				return nil, err
			}
			rest = append(rest, media...)
			out = append(out, chatMessage{Role: "tool", ToolCallID: string(tr.CallID), Content: resultText(text, tr.IsError)})
		}
		for _, p := range m.Parts {
			if _, ok := p.(*llm.ToolResult); ok {
				continue
			}
			if _, ok := p.(*llm.Reasoning); ok {
				continue
			}
			cc, err := chatPart(p)
			if err != nil {
				return nil, err
			}
			rest = append(rest, cc)
		}
		if len(rest) == 0 {
			return out, nil
		}
		if len(rest) == 1 && rest[0].Type == "text" {
			return append(out, chatMessage{Role: "user", Content: rest[0].Text}), nil
		}
		return append(out, chatMessage{Role: "user", Content: rest}), nil
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
}

func chatPart(p llm.Part) (chatContent, error) {
	switch p := p.(type) {
	case *llm.Text:
		return chatContent{Type: "text", Text: p.Text}, nil
	case *llm.Image:
		u, err := imageURL(p)
		if err != nil {
			return chatContent{}, err
		}
		return chatContent{Type: "image_url", ImageURL: &chatImageURL{URL: u}}, nil
	case *llm.Document:
		if t, ok := docText(p); ok {
			return chatContent{Type: "text", Text: t}, nil
		}
		if len(p.Data) == 0 {
			return chatContent{}, fmt.Errorf("%w: Chat Completions cannot take a document by URL; inline its bytes or use the Responses API", ErrUnsupported)
		}
		return chatContent{Type: "file", File: &chatFile{Filename: docName(p), FileData: dataURL(p.MediaType, p.Data)}}, nil
	case *llm.ToolCall:
		return chatContent{}, fmt.Errorf("%w: a tool call in a user message; tool calls belong to the assistant", ErrUnsupported)
	}
	return chatContent{}, fmt.Errorf("%w: part type %T", ErrUnsupported, p)
}

// resultText renders a tool result for an API with no error flag.
func resultText(s string, isError bool) string {
	if !isError {
		return s
	}
	if s == "" {
		return "Error"
	}
	return "Error: " + s
}

func textOf(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func argsOr(a json.RawMessage) string {
	if len(bytes.TrimSpace(a)) == 0 {
		return "{}"
	}
	return string(a)
}

func imageURL(p *llm.Image) (string, error) {
	if len(p.Data) > 0 {
		mt := p.MediaType
		if mt == "" {
			return "", fmt.Errorf("%w: an inline image needs a MediaType such as image/png", ErrUnsupported)
		}
		return dataURL(mt, p.Data), nil
	}
	if p.URL == "" {
		return "", fmt.Errorf("%w: an image with neither data nor URL", ErrUnsupported)
	}
	return p.URL, nil
}

func dataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// docText renders an inline plain-text document (text/*, JSON) as text,
// which every model reads, rather than as a file few servers accept.
func docText(d *llm.Document) (string, bool) {
	if len(d.Data) == 0 || !utf8.Valid(d.Data) {
		return "", false
	}
	mt := d.MediaType
	if !strings.HasPrefix(mt, "text/") && mt != "application/json" {
		return "", false
	}
	if d.Title != "" {
		return d.Title + ":\n\n" + string(d.Data), true
	}
	return string(d.Data), true
}

func docName(d *llm.Document) string {
	if d.Title != "" {
		return d.Title
	}
	if d.MediaType == "application/pdf" {
		return "document.pdf"
	}
	return "document"
}

// splitResult splits a tool result into the text an API's tool message
// carries and the pictures and documents it cannot, converted by conv so
// they can follow in a user message.
func splitResult[T any](tr *llm.ToolResult, conv func(llm.Part) (T, error)) (string, []T, error) {
	var text strings.Builder
	var media []T
	for _, q := range tr.Parts {
		switch q := q.(type) {
		case *llm.Text:
			text.WriteString(q.Text)
		case *llm.Image, *llm.Document:
			c, err := conv(q)
			if err != nil {
				return "", nil, err
			}
			media = append(media, c)
		}
	}
	return text.String(), media, nil
}
