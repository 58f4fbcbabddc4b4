package llmtest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
)

// openaiWire speaks OpenAI Chat Completions.
type openaiWire struct{}

func (openaiWire) name() string { return "OpenAI Chat Completions" }

type oPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	File *struct {
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	} `json:"file"`
}

type oToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCalls        []oToolCall     `json:"tool_calls"`
		ToolCallID       string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
	User          string `json:"user"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (openaiWire) decode(body []byte) (*decoded, error) {
	var in oRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if in.Model == "" {
		return nil, errors.New("model: field required")
	}
	req := &llm.Request{
		Model:             in.Model,
		MaxTokens:         in.MaxCompletionTokens,
		ParallelToolCalls: in.ParallelToolCalls,
		Temperature:       in.Temperature,
		TopP:              in.TopP,
		Seed:              in.Seed,
		PresencePenalty:   in.PresencePenalty,
		FrequencyPenalty:  in.FrequencyPenalty,
		User:              in.User,
		Messages:          []llm.Message{},
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = in.MaxTokens
	}
	if len(in.Stop) > 0 && !bytes.Equal(in.Stop, []byte("null")) {
		var one string
		if json.Unmarshal(in.Stop, &one) == nil {
			req.Stop = []string{one}
		} else if err := json.Unmarshal(in.Stop, &req.Stop); err != nil {
			return nil, fmt.Errorf("stop: %w", err)
		}
	}
	if in.ReasoningEffort != "" {
		req.Reasoning = &llm.ReasoningOptions{Effort: in.ReasoningEffort}
	}
	if rf := in.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
		req.ResponseFormat = &llm.ResponseFormat{Name: rf.JSONSchema.Name, Schema: rf.JSONSchema.Schema, Strict: rf.JSONSchema.Strict}
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, llm.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	if len(in.ToolChoice) > 0 && !bytes.Equal(in.ToolChoice, []byte("null")) {
		var mode string
		if json.Unmarshal(in.ToolChoice, &mode) == nil {
			switch mode {
			case "required":
				req.ToolChoice.Mode = llm.ToolChoiceRequired
			case "none":
				req.ToolChoice.Mode = llm.ToolChoiceNone
			}
		} else {
			var named struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(in.ToolChoice, &named); err != nil {
				return nil, fmt.Errorf("tool_choice: %w", err)
			}
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: named.Function.Name}
		}
	}
	for i, m := range in.Messages {
		switch m.Role {
		case "system", "developer":
			parts, err := oParts(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d.content: %w", i, err)
			}
			for _, p := range parts {
				if t, ok := p.(*llm.Text); ok {
					req.System = append(req.System, *t)
				}
			}
		case "user":
			parts, err := oParts(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d.content: %w", i, err)
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Parts: parts})
		case "assistant":
			var parts []llm.Part
			if m.ReasoningContent != "" {
				parts = append(parts, &llm.Reasoning{Text: m.ReasoningContent})
			}
			text, err := oParts(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d.content: %w", i, err)
			}
			parts = append(parts, text...)
			for _, c := range m.ToolCalls {
				var args json.RawMessage
				if c.Function.Arguments != "" {
					args = json.RawMessage(c.Function.Arguments)
				}
				parts = append(parts, &llm.ToolCall{ID: llm.CallID(c.ID), Name: c.Function.Name, Args: args})
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Parts: parts})
		case "tool":
			inner, err := oParts(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d.content: %w", i, err)
			}
			r := &llm.ToolResult{CallID: llm.CallID(m.ToolCallID), Parts: inner}
			// Consecutive tool messages answer one assistant message: they
			// ride one user message, as in llm.
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser && onlyResults(req.Messages[n-1].Parts) {
				req.Messages[n-1].Parts = append(req.Messages[n-1].Parts, r)
			} else {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{r}})
			}
		default:
			return nil, fmt.Errorf("messages.%d.role: unexpected role %q", i, m.Role)
		}
	}
	d := &decoded{req: req, stream: in.Stream, autoCache: true}
	if in.StreamOptions != nil {
		d.includeUsage = in.StreamOptions.IncludeUsage
	}
	return d, nil
}

func onlyResults(parts []llm.Part) bool {
	for _, p := range parts {
		if _, ok := p.(*llm.ToolResult); !ok {
			return false
		}
	}
	return len(parts) > 0
}

// oParts decodes a content field: null, a string or an array of parts.
func oParts(raw json.RawMessage) ([]llm.Part, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []llm.Part{&llm.Text{Text: s}}, nil
	}
	var in []oPart
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	parts := make([]llm.Part, 0, len(in))
	for i, p := range in {
		switch p.Type {
		case "text":
			parts = append(parts, &llm.Text{Text: p.Text})
		case "refusal":
			// An assistant's earlier refusal: nothing to carry.
		case "image_url":
			if p.ImageURL == nil {
				return nil, fmt.Errorf("%d.image_url: field required", i)
			}
			img := &llm.Image{URL: p.ImageURL.URL}
			if mt, data, ok := dataURL(p.ImageURL.URL); ok {
				img = &llm.Image{MediaType: mt, Data: data}
			}
			parts = append(parts, img)
		case "file":
			if p.File == nil {
				return nil, fmt.Errorf("%d.file: field required", i)
			}
			doc := &llm.Document{Title: p.File.Filename}
			if mt, data, ok := dataURL(p.File.FileData); ok {
				doc.MediaType, doc.Data = mt, data
			}
			parts = append(parts, doc)
		default:
			return nil, fmt.Errorf("%d.type: unsupported part type %q", i, p.Type)
		}
	}
	return parts, nil
}

// dataURL decodes "data:<media type>;base64,<data>".
func dataURL(s string) (string, []byte, bool) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", nil, false
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, false
	}
	mt, isB64 := strings.CutSuffix(meta, ";base64")
	if !isB64 {
		return mt, []byte(payload), true
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, false
	}
	return mt, data, true
}

// oErrorFor returns the status, error type, code and message OpenAI sends
// for pe.
func oErrorFor(pe *llm.ProviderError) (status int, typ, code, msg string) {
	or := func(def string) string {
		if pe.Message != "" {
			return pe.Message
		}
		return def
	}
	switch pe.Kind {
	case llm.ErrRateLimited:
		return 429, "requests", "rate_limit_exceeded", or("Rate limit reached for requests per min (RPM). Please try again later.")
	case llm.ErrOverloaded:
		return 503, "server_error", "", or("The server is overloaded or not ready yet.")
	case llm.ErrTimeout:
		return 504, "server_error", "", or("Request timed out.")
	case llm.ErrContextTooLong:
		return 400, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages."
	case llm.ErrQuota:
		return 429, "insufficient_quota", "insufficient_quota",
			"You exceeded your current quota, please check your plan and billing details."
	case llm.ErrAuth:
		return 401, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case llm.ErrInvalidRequest:
		return statusFor(pe, 400), "invalid_request_error", "", or("Invalid request.")
	default:
		return statusFor(pe, 500), "server_error", "", or("The server had an error while processing your request. Sorry about that!")
	}
}

func oErrorBody(pe *llm.ProviderError) map[string]any {
	_, typ, code, msg := oErrorFor(pe)
	var c any
	if code != "" {
		c = code
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}}
}

func (openaiWire) writeError(w http.ResponseWriter, id string, err error) {
	pe := providerError(err)
	status, _, _, _ := oErrorFor(pe)
	setErrorHeaders(w.Header(), "X-Request-Id", id, pe)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(oErrorBody(pe))
}

func (openaiWire) newStream(w http.ResponseWriter, flush func(), d *decoded, e Entry, id string) streamWriter {
	return &oStream{
		w:       w,
		sse:     sse{w: bufio.NewWriter(w), flush: flush},
		e:       e,
		d:       d,
		id:      "chatcmpl-" + id,
		model:   finishModel(e, d.req),
		created: time.Now().Unix(),
		calls:   map[int]int{},
	}
}

type oStream struct {
	w       http.ResponseWriter
	sse     sse
	e       Entry
	d       *decoded
	id      string
	model   string
	created int64
	calls   map[int]int // llm block index → tool call index
	usage   llm.Usage
	done    bool
}

func (s *oStream) chunkObject(delta map[string]any, finish any) map[string]any {
	o := map[string]any{
		"id":                 s.id,
		"object":             "chat.completion.chunk",
		"created":            s.created,
		"model":              s.model,
		"system_fingerprint": nil,
		"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
	if s.d.includeUsage {
		o["usage"] = nil
	}
	return o
}

func (s *oStream) start() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Request-Id", strings.TrimPrefix(s.id, "chatcmpl-"))
	s.w.WriteHeader(http.StatusOK)
	return s.sse.event("", s.chunkObject(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
}

func (s *oStream) finished() bool { return s.done }

func (s *oStream) chunk(c llm.Chunk) error {
	switch c := c.(type) {
	case *llm.TextDelta:
		if c.Text == "" {
			return nil
		}
		return s.sse.event("", s.chunkObject(map[string]any{"content": c.Text}, nil))
	case *llm.ReasoningDelta:
		if c.Text == "" {
			return nil
		}
		return s.sse.event("", s.chunkObject(map[string]any{"reasoning_content": c.Text}, nil))
	case *llm.BlockStart:
		if c.Kind == llm.BlockToolCall {
			return s.call(c.Index, "")
		}
	case *llm.ToolCallDelta:
		return s.call(c.Index, c.Args)
	case *llm.UsageChunk:
		s.usage.Merge(c.Usage)
	case *llm.Finish:
		s.done = true
		if err := s.sse.event("", s.chunkObject(map[string]any{}, oFinishReason(c.Reason))); err != nil {
			return err
		}
		if s.d.includeUsage {
			u := s.usage
			if err := s.sse.event("", map[string]any{
				"id":                 s.id,
				"object":             "chat.completion.chunk",
				"created":            s.created,
				"model":              s.model,
				"system_fingerprint": nil,
				"choices":            []any{},
				"usage":              oUsageBody(u),
			}); err != nil {
				return err
			}
		}
		return s.sse.raw("data: [DONE]\n\n")
	}
	return nil
}

// call sends a tool_calls delta; the first for a call carries its id,
// type and name.
func (s *oStream) call(index int, args string) error {
	fn := map[string]any{}
	tc := map[string]any{"function": fn}
	n, seen := s.calls[index]
	if !seen {
		n = len(s.calls)
		s.calls[index] = n
		id, name, _ := lookAhead(s.e.chunks, index)
		if id != "" {
			tc["id"] = string(id)
		}
		tc["type"] = "function"
		fn["name"] = name
		fn["arguments"] = args
	} else {
		if args == "" {
			return nil
		}
		fn["arguments"] = args
	}
	tc["index"] = n
	return s.sse.event("", s.chunkObject(map[string]any{"tool_calls": []any{tc}}, nil))
}

func oFinishReason(r llm.FinishReason) string {
	switch r {
	case llm.FinishToolCalls:
		return "tool_calls"
	case llm.FinishMaxTokens:
		return "length"
	case llm.FinishFiltered:
		return "content_filter"
	}
	return "stop"
}

func (s *oStream) fail(err error) error {
	return s.sse.event("", oErrorBody(providerError(err)))
}

func oUsageBody(u llm.Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":     u.PromptTokens(),
		"completion_tokens": u.Output,
		"total_tokens":      u.Total(),
		"prompt_tokens_details": map[string]any{
			"cached_tokens": u.CacheRead,
			"audio_tokens":  0,
		},
		"completion_tokens_details": map[string]any{
			"reasoning_tokens":           u.Reasoning,
			"audio_tokens":               0,
			"accepted_prediction_tokens": 0,
			"rejected_prediction_tokens": 0,
		},
	}
}

func (openaiWire) writeWhole(w http.ResponseWriter, d *decoded, e Entry, res *llm.Response, id string) {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	var text, reasoning strings.Builder
	var calls []any
	for _, p := range res.Message.Parts {
		switch p := p.(type) {
		case *llm.Text:
			text.WriteString(p.Text)
		case *llm.Reasoning:
			reasoning.WriteString(p.Text)
		case *llm.ToolCall:
			calls = append(calls, map[string]any{
				"id": string(p.ID), "type": "function",
				"function": map[string]any{"name": p.Name, "arguments": string(p.Args)},
			})
		}
	}
	if text.Len() > 0 {
		msg["content"] = text.String()
	}
	if reasoning.Len() > 0 {
		msg["reasoning_content"] = reasoning.String()
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", id)
	json.NewEncoder(w).Encode(map[string]any{
		"id":                 "chatcmpl-" + id,
		"object":             "chat.completion",
		"created":            time.Now().Unix(),
		"model":              finishModel(e, d.req),
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": oFinishReason(res.Finish)}},
		"usage":              oUsageBody(res.Usage),
		"system_fingerprint": nil,
	})
}
