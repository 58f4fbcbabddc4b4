package openai

import (
	"errors"
	"fmt"
	"strings"

	"encoding/json"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// The Responses request body. Only what rein sends is declared.
// Model, instructions and input lead the body and are written apart: the
// body is the input array spliced between them and the rest.
type respRequest struct {
	Stream            bool           `json:"stream"`
	Store             bool           `json:"store"`
	Include           []string       `json:"include,omitempty"`
	Tools             []respTool     `json:"tools,omitempty"`
	ToolChoice        any            `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool          `json:"parallel_tool_calls,omitempty"`
	Temperature       *float64       `json:"temperature,omitempty"`
	TopP              *float64       `json:"top_p,omitempty"`
	MaxOutputTokens   int            `json:"max_output_tokens,omitempty"`
	Reasoning         *respReasoning `json:"reasoning,omitempty"`
	Text              *respText      `json:"text,omitempty"`
	User              string         `json:"user,omitempty"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"` // the API defaults to true; say false
}

type respReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type respText struct {
	Format respFormat `json:"format"`
}

type respFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type respMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or []respContent
}

type respContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type respFunctionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type respFunctionOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type respReasoningItem struct {
	Type             string        `json:"type"`
	ID               string        `json:"id"`
	EncryptedContent string        `json:"encrypted_content,omitempty"`
	Summary          []respSummary `json:"summary"`
}

type respSummary struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// RequestBody returns the JSON body Stream would send for req. It is
// exported for golden tests and debugging; it never includes the key.
func (r *Responses) RequestBody(req *llm.Request) ([]byte, error) {
	b, err := r.cfg.respBody(new(itemCache), req)
	return b.Bytes(), err
}

// reasoningModel guesses whether a model reasons, so that its encrypted
// reasoning is asked for even when the request sets no reasoning options.
func reasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return strings.HasPrefix(m, "gpt-5") || strings.HasPrefix(m, "gpt-oss") || strings.HasPrefix(m, "codex") ||
		(len(m) > 1 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9')
}

func (c *config) respBody(ic *itemCache, req *llm.Request) (wirebody.Body, error) {
	var none wirebody.Body
	if req == nil {
		return none, errors.New("openai: nil request")
	}
	out := respRequest{
		Stream:          true,
		Temperature:     req.Temperature,
		TopP:            req.TopP,
		MaxOutputTokens: req.MaxTokens,
		User:            req.User,
	}
	if req.Reasoning != nil && (req.Reasoning.Effort != "" || req.Reasoning.Summary != "") {
		out.Reasoning = &respReasoning{Effort: req.Reasoning.Effort, Summary: req.Reasoning.Summary}
	}
	// The log is the truth, so nothing is stored server-side; reasoning
	// comes back encrypted to be replayed with the history.
	if req.Reasoning != nil || reasoningModel(req.Model) {
		out.Include = []string{"reasoning.encrypted_content"}
	}
	if rf := req.ResponseFormat; rf != nil {
		out.Text = &respText{Format: respFormat{Type: "json_schema", Name: firstNonEmpty(rf.Name, "response"), Schema: schemaOr(rf.Schema), Strict: rf.Strict}}
	}
	if len(req.Tools) > 0 {
		out.Tools = make([]respTool, len(req.Tools))
		for i, t := range req.Tools {
			out.Tools[i] = respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schemaOr(t.Schema), Strict: c.strict}
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
			out.ToolChoice = map[string]string{"type": "function", "name": req.ToolChoice.Name}
		default:
			return none, fmt.Errorf("openai: unknown tool choice mode %q; use auto, required, none or tool", req.ToolChoice.Mode)
		}
	}
	head, err := marshal(req.Model)
	if err != nil {
		return none, err
	}
	head = append([]byte(`{"model":`), head...)
	if len(req.System) > 0 {
		instr, err := marshal(joinSystem(req.System))
		if err != nil {
			return none, err
		}
		head = append(append(head, `,"instructions":`...), instr...)
	}
	head = append(head, `,"input":[`...)
	var scratch []any
	items, err := ic.update(req.Messages, func(w *itemWriter, m *llm.Message) (err error) {
		scratch, err = encodeItems(w, m, scratch, c.appendRespItems)
		return err
	})
	if err != nil {
		return none, err
	}
	return assemble(head, items, false, out)
}

func (c *config) appendRespItems(out []any, m *llm.Message) ([]any, error) {
	switch m.Role {
	case llm.RoleSystem:
		return append(out, respMessage{Role: "developer", Content: textOf(m.Parts)}), nil
	case llm.RoleAssistant:
		// Reasoning is replayed only to the provider that produced it.
		ours := m.Provenance != nil && m.Provenance.Provider == c.provider
		var text strings.Builder
		flush := func() {
			if text.Len() > 0 {
				out = append(out, respMessage{Role: "assistant", Content: text.String()})
				text.Reset()
			}
		}
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				text.WriteString(p.Text)
			case *llm.Reasoning:
				if !ours || !strings.HasPrefix(p.Signature, "rs_") || p.Redacted == "" {
					continue
				}
				flush()
				item := respReasoningItem{Type: "reasoning", ID: p.Signature, EncryptedContent: p.Redacted, Summary: []respSummary{}}
				if p.Text != "" {
					item.Summary = append(item.Summary, respSummary{Type: "summary_text", Text: p.Text})
				}
				out = append(out, item)
			case *llm.ToolCall:
				flush()
				out = append(out, respFunctionCall{Type: "function_call", CallID: string(p.ID), Name: p.Name, Arguments: argsOr(p.Args)})
			}
		}
		flush()
		return out, nil
	case llm.RoleUser, "":
		var rest []respContent
		for _, p := range m.Parts {
			tr, ok := p.(*llm.ToolResult)
			if !ok {
				continue
			}
			text, media, err := splitResult(tr, respPart)
			if err != nil {
				return nil, err
			}
			rest = append(rest, media...)
			out = append(out, respFunctionOutput{Type: "function_call_output", CallID: string(tr.CallID), Output: resultText(text, tr.IsError)})
		}
		for _, p := range m.Parts {
			switch p.(type) {
			case *llm.ToolResult, *llm.Reasoning:
				continue
			}
			rc, err := respPart(p)
			if err != nil {
				return nil, err
			}
			rest = append(rest, rc)
		}
		if len(rest) > 0 {
			out = append(out, respMessage{Role: "user", Content: rest})
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
}

func respPart(p llm.Part) (respContent, error) {
	switch p := p.(type) {
	case *llm.Text:
		return respContent{Type: "input_text", Text: p.Text}, nil
	case *llm.Image:
		u, err := imageURL(p)
		if err != nil {
			return respContent{}, err
		}
		return respContent{Type: "input_image", ImageURL: u, Detail: "auto"}, nil
	case *llm.Document:
		if t, ok := docText(p); ok {
			return respContent{Type: "input_text", Text: t}, nil
		}
		if len(p.Data) > 0 {
			return respContent{Type: "input_file", Filename: docName(p), FileData: dataURL(p.MediaType, p.Data)}, nil
		}
		if p.URL == "" {
			return respContent{}, fmt.Errorf("%w: a document with neither data nor URL", ErrUnsupported)
		}
		return respContent{Type: "input_file", FileURL: p.URL}, nil
	case *llm.ToolCall:
		return respContent{}, fmt.Errorf("%w: a tool call in a user message; tool calls belong to the assistant", ErrUnsupported)
	}
	return respContent{}, fmt.Errorf("%w: part type %T", ErrUnsupported, p)
}
