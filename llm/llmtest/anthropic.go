package llmtest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/reinhq/rein/llm"
)

// anthropicWire speaks the Anthropic Messages API.
type anthropicWire struct{}

func (anthropicWire) name() string { return "Anthropic Messages" }

type aCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type aSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

type aBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	Source       *aSource        `json:"source"`
	Title        string          `json:"title"`
	CacheControl *aCacheControl  `json:"cache_control"`
}

type aRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Type         string          `json:"type"`
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl *aCacheControl  `json:"cache_control"`
	} `json:"tools"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"top_p"`
	TopK          *int     `json:"top_k"`
	StopSequences []string `json:"stop_sequences"`
	Stream        bool     `json:"stream"`
	Thinking      *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Metadata *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

func (anthropicWire) decode(body []byte) (*decoded, error) {
	var in aRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if in.Model == "" {
		return nil, errors.New("model: field required")
	}
	if in.MaxTokens <= 0 {
		return nil, errors.New("max_tokens: field required")
	}
	req := &llm.Request{
		Model:       in.Model,
		MaxTokens:   in.MaxTokens,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		TopK:        in.TopK,
		Stop:        in.StopSequences,
		Messages:    []llm.Message{},
	}
	if len(in.System) > 0 && !bytes.Equal(in.System, []byte("null")) {
		var s string
		if json.Unmarshal(in.System, &s) == nil {
			req.System = []llm.Text{{Text: s}}
		} else {
			var blocks []aBlock
			if err := json.Unmarshal(in.System, &blocks); err != nil {
				return nil, fmt.Errorf("system: %w", err)
			}
			for _, b := range blocks {
				req.System = append(req.System, llm.Text{Text: b.Text, Cache: aHint(b.CacheControl)})
			}
		}
	}
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("messages.%d.role: unexpected role %q", i, m.Role)
		}
		parts, err := aParts(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages.%d.content: %w", i, err)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.Role(m.Role), Parts: parts})
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, llm.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.InputSchema, Cache: aHint(t.CacheControl)})
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "any":
			req.ToolChoice.Mode = llm.ToolChoiceRequired
		case "none":
			req.ToolChoice.Mode = llm.ToolChoiceNone
		case "tool":
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: tc.Name}
		}
		if tc.DisableParallelToolUse != nil {
			p := !*tc.DisableParallelToolUse
			req.ParallelToolCalls = &p
		}
	}
	if th := in.Thinking; th != nil && th.Type == "enabled" {
		req.Reasoning = &llm.ReasoningOptions{BudgetTokens: th.BudgetTokens}
	}
	if in.Metadata != nil {
		req.User = in.Metadata.UserID
	}
	return &decoded{req: req, stream: in.Stream}, nil
}

func aHint(cc *aCacheControl) *llm.CacheHint {
	if cc == nil {
		return nil
	}
	h := &llm.CacheHint{}
	if cc.TTL != "" {
		if d, err := time.ParseDuration(cc.TTL); err == nil {
			h.TTL = d
		}
	}
	return h
}

// aParts decodes a content field: a string or an array of blocks.
func aParts(raw json.RawMessage) ([]llm.Part, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []llm.Part{&llm.Text{Text: s}}, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	parts := make([]llm.Part, 0, len(blocks))
	for i, b := range blocks {
		hint := aHint(b.CacheControl)
		switch b.Type {
		case "text":
			parts = append(parts, &llm.Text{Text: b.Text, Cache: hint})
		case "thinking":
			parts = append(parts, &llm.Reasoning{Text: b.Thinking, Signature: b.Signature, Cache: hint})
		case "redacted_thinking":
			parts = append(parts, &llm.Reasoning{Redacted: b.Data, Cache: hint})
		case "tool_use":
			parts = append(parts, &llm.ToolCall{ID: llm.CallID(b.ID), Name: b.Name, Args: b.Input, Cache: hint})
		case "tool_result":
			r := &llm.ToolResult{CallID: llm.CallID(b.ToolUseID), IsError: b.IsError, Cache: hint}
			if len(b.Content) > 0 && !bytes.Equal(b.Content, []byte("null")) {
				inner, err := aParts(b.Content)
				if err != nil {
					return nil, fmt.Errorf("%d.content: %w", i, err)
				}
				r.Parts = inner
			}
			parts = append(parts, r)
		case "image", "document":
			if b.Source == nil {
				return nil, fmt.Errorf("%d.source: field required", i)
			}
			var data []byte
			if b.Source.Type == "base64" {
				d, err := base64.StdEncoding.DecodeString(b.Source.Data)
				if err != nil {
					return nil, fmt.Errorf("%d.source.data: %w", i, err)
				}
				data = d
			} else if b.Source.Type == "text" {
				data = []byte(b.Source.Data)
			}
			if b.Type == "image" {
				parts = append(parts, &llm.Image{MediaType: b.Source.MediaType, Data: data, URL: b.Source.URL, Cache: hint})
			} else {
				parts = append(parts, &llm.Document{MediaType: b.Source.MediaType, Data: data, URL: b.Source.URL, Title: b.Title, Cache: hint})
			}
		default:
			return nil, fmt.Errorf("%d.type: unsupported block type %q", i, b.Type)
		}
	}
	return parts, nil
}

// aErrorFor returns the status, error type and message Anthropic sends
// for pe.
func aErrorFor(pe *llm.ProviderError) (int, string, string) {
	msg := pe.Message
	or := func(def string) string {
		if msg != "" {
			return msg
		}
		return def
	}
	switch pe.Kind {
	case llm.ErrRateLimited:
		return 429, "rate_limit_error", or("This request would exceed the rate limit for your organization. Please try again later.")
	case llm.ErrOverloaded:
		return 529, "overloaded_error", or("Overloaded")
	case llm.ErrTimeout:
		return 504, "timeout_error", or("Request timed out")
	case llm.ErrContextTooLong:
		return 400, "invalid_request_error", "prompt is too long: 215372 tokens > 200000 maximum"
	case llm.ErrQuota:
		return 400, "billing_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	case llm.ErrAuth:
		return 401, "authentication_error", "invalid x-api-key"
	case llm.ErrInvalidRequest:
		return statusFor(pe, 400), "invalid_request_error", or("invalid request")
	default: // server and anything else
		return statusFor(pe, 500), "api_error", or("Internal server error")
	}
}

func (anthropicWire) writeError(w http.ResponseWriter, id string, err error) {
	pe := providerError(err)
	status, typ, msg := aErrorFor(pe)
	setErrorHeaders(w.Header(), "Request-Id", id, pe)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type":       "error",
		"error":      map[string]string{"type": typ, "message": msg},
		"request_id": id,
	})
}

func (anthropicWire) newStream(w http.ResponseWriter, flush func(), d *decoded, e Entry, id string) streamWriter {
	return &aStream{
		w:     w,
		sse:   sse{w: bufio.NewWriter(w), flush: flush},
		e:     e,
		req:   d.req,
		id:    id,
		index: map[int]int{},
		open:  map[int]bool{},
	}
}

type aStream struct {
	w     http.ResponseWriter
	sse   sse
	e     Entry
	req   *llm.Request
	id    string
	index map[int]int  // llm block index → wire index
	open  map[int]bool // by llm index
	order []int        // llm indexes in wire order
	usage llm.Usage
	done  bool
}

type aUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int64 `json:"output_tokens"`
}

func toAUsage(u llm.Usage, output bool) aUsage {
	var a aUsage
	a.InputTokens = u.Input
	a.CacheCreationInputTokens = u.CacheWrite
	a.CacheReadInputTokens = u.CacheRead
	a.CacheCreation.Ephemeral5m = u.CacheWrite5m
	a.CacheCreation.Ephemeral1h = u.CacheWrite1h
	if u.CacheWrite5m == 0 && u.CacheWrite1h == 0 {
		a.CacheCreation.Ephemeral5m = u.CacheWrite
	}
	if output {
		a.OutputTokens = u.Output
	}
	return a
}

func (s *aStream) start() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", s.id)
	s.w.WriteHeader(http.StatusOK)
	u, _ := s.e.usage()
	return s.sse.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id":            "msg_" + s.id,
			"type":          "message",
			"role":          "assistant",
			"model":         finishModel(s.e, s.req),
			"content":       []any{},
			"stop_reason":   nil,
			"stop_sequence": nil,
			"usage":         toAUsage(u, false),
		},
	})
}

func (s *aStream) finished() bool { return s.done }

// ensure opens block i on the wire if it is not open yet.
func (s *aStream) ensure(i int, kind llm.BlockKind) (int, bool, error) {
	if wi, ok := s.index[i]; ok {
		return wi, s.open[i], nil
	}
	wi := len(s.order)
	s.index[i] = wi
	s.order = append(s.order, i)
	s.open[i] = true
	var block map[string]any
	switch kind {
	case llm.BlockToolCall:
		id, name, _ := lookAhead(s.e.chunks, i)
		block = map[string]any{"type": "tool_use", "id": string(id), "name": name, "input": map[string]any{}}
	case llm.BlockReasoning:
		if _, _, red := lookAhead(s.e.chunks, i); red != "" {
			block = map[string]any{"type": "redacted_thinking", "data": red}
		} else {
			block = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
		}
	default:
		block = map[string]any{"type": "text", "text": ""}
	}
	err := s.sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": wi, "content_block": block})
	return wi, true, err
}

func (s *aStream) delta(wi int, delta map[string]any) error {
	return s.sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": wi, "delta": delta})
}

func (s *aStream) stop(i int) error {
	if !s.open[i] {
		return nil
	}
	s.open[i] = false
	return s.sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": s.index[i]})
}

func (s *aStream) chunk(c llm.Chunk) error {
	switch c := c.(type) {
	case *llm.BlockStart:
		_, _, err := s.ensure(c.Index, c.Kind)
		return err
	case *llm.TextDelta:
		wi, open, err := s.ensure(c.Index, llm.BlockText)
		if err != nil || !open || c.Text == "" {
			return err
		}
		return s.delta(wi, map[string]any{"type": "text_delta", "text": c.Text})
	case *llm.ReasoningDelta:
		wi, open, err := s.ensure(c.Index, llm.BlockReasoning)
		if err != nil || !open {
			return err
		}
		if c.Text != "" {
			if err := s.delta(wi, map[string]any{"type": "thinking_delta", "thinking": c.Text}); err != nil {
				return err
			}
		}
		if c.Signature != "" {
			return s.delta(wi, map[string]any{"type": "signature_delta", "signature": c.Signature})
		}
		return nil
	case *llm.ToolCallDelta:
		wi, open, err := s.ensure(c.Index, llm.BlockToolCall)
		if err != nil || !open || c.Args == "" {
			return err
		}
		return s.delta(wi, map[string]any{"type": "input_json_delta", "partial_json": c.Args})
	case *llm.BlockEnd:
		return s.stop(c.Index)
	case *llm.UsageChunk:
		s.usage.Merge(c.Usage)
		return nil
	case *llm.Finish:
		for _, i := range s.order {
			if err := s.stop(i); err != nil {
				return err
			}
		}
		s.done = true
		if err := s.sse.event("message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": aStopReason(c.Reason), "stop_sequence": nil},
			"usage": toAUsage(s.usage, true),
		}); err != nil {
			return err
		}
		return s.sse.event("message_stop", map[string]any{"type": "message_stop"})
	}
	return nil
}

func aStopReason(r llm.FinishReason) string {
	switch r {
	case llm.FinishToolCalls:
		return "tool_use"
	case llm.FinishMaxTokens:
		return "max_tokens"
	case llm.FinishFiltered:
		return "refusal"
	}
	return "end_turn"
}

func (s *aStream) fail(err error) error {
	_, typ, msg := aErrorFor(providerError(err))
	return s.sse.event("error", map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}

func (anthropicWire) writeWhole(w http.ResponseWriter, d *decoded, e Entry, res *llm.Response, id string) {
	content := []any{}
	for _, p := range res.Message.Parts {
		switch p := p.(type) {
		case *llm.Text:
			content = append(content, map[string]any{"type": "text", "text": p.Text})
		case *llm.Reasoning:
			if p.Redacted != "" {
				content = append(content, map[string]any{"type": "redacted_thinking", "data": p.Redacted})
			} else {
				content = append(content, map[string]any{"type": "thinking", "thinking": p.Text, "signature": p.Signature})
			}
		case *llm.ToolCall:
			var input any = map[string]any{}
			if len(p.Args) > 0 {
				if json.Valid(p.Args) {
					input = json.RawMessage(p.Args)
				} else {
					input = string(p.Args)
				}
			}
			content = append(content, map[string]any{"type": "tool_use", "id": string(p.ID), "name": p.Name, "input": input})
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Request-Id", id)
	json.NewEncoder(w).Encode(map[string]any{
		"id":            "msg_" + id,
		"type":          "message",
		"role":          "assistant",
		"model":         finishModel(e, d.req),
		"content":       content,
		"stop_reason":   aStopReason(res.Finish),
		"stop_sequence": nil,
		"usage":         toAUsage(res.Usage, true),
	})
}
