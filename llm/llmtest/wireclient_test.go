package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// wireModel is a minimal test adapter that speaks the server's wires with
// nothing but net/http, so the conformance suite runs end to end over HTTP
// without depending on a provider package. It handles text messages and
// tools only.
type wireModel struct {
	url    string
	client *http.Client
	openai bool
}

func (w *wireModel) body(req *llm.Request) []byte {
	var sys []string
	for _, s := range req.System {
		sys = append(sys, s.Text)
	}
	var msgs []map[string]any
	if w.openai && len(sys) > 0 {
		msgs = append(msgs, map[string]any{"role": "system", "content": strings.Join(sys, "\n")})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, map[string]any{"role": string(m.Role), "content": m.Text()})
	}
	var tools []map[string]any
	for _, t := range req.Tools {
		if w.openai {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Schema}})
		} else {
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Schema})
		}
	}
	body := map[string]any{"model": req.Model, "messages": msgs, "stream": true}
	if tools != nil {
		body["tools"] = tools
	}
	if w.openai {
		body["max_completion_tokens"] = req.MaxTokens
		body["stream_options"] = map[string]any{"include_usage": true}
	} else {
		body["max_tokens"] = req.MaxTokens
		if len(sys) > 0 {
			body["system"] = strings.Join(sys, "\n")
		}
	}
	b, _ := json.Marshal(body)
	return b
}

func (w *wireModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		path := "/v1/messages"
		if w.openai {
			path = "/v1/chat/completions"
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+path, bytes.NewReader(w.body(req)))
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := w.client.Do(hreq)
		if err != nil {
			yield(nil, fmt.Errorf("wire: %w", err))
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			yield(nil, statusError(resp, b, w.openai))
			return
		}
		var ok bool
		if w.openai {
			ok = w.readOpenAI(ctx, resp.Body, yield)
		} else {
			ok = w.readAnthropic(ctx, resp.Body, yield)
		}
		_ = ok
	}
}

// events yields the data of each server-sent event with its name.
func events(r io.Reader) iter.Seq2[[2]string, error] {
	return func(yield func([2]string, error) bool) {
		sc := bufio.NewScanner(r)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if !yield([2]string{name, strings.TrimPrefix(line, "data: ")}, nil) {
					return
				}
				name = ""
			}
		}
		if err := sc.Err(); err != nil {
			yield([2]string{}, err)
		}
	}
}

func streamErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("wire: %w", ctx.Err())
	}
	return &llm.ProviderError{Kind: llm.ErrTransport, Provider: "wire", Err: err}
}

func (w *wireModel) readAnthropic(ctx context.Context, body io.Reader, yield func(llm.Chunk, error) bool) bool {
	kinds := map[int]llm.BlockKind{}
	var usage llm.Usage
	for ev, err := range events(body) {
		if err != nil {
			return yield(nil, streamErr(ctx, err))
		}
		var e struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock struct {
				Type, ID, Name string
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				Thinking    string `json:"thinking"`
				Signature   string `json:"signature"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Message struct {
				Usage aUsage `json:"usage"`
			} `json:"message"`
			Usage aUsage `json:"usage"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
			return yield(nil, err)
		}
		var c llm.Chunk
		switch e.Type {
		case "message_start":
			usage.Merge(e.Message.Usage.llm())
		case "content_block_start":
			kind := llm.BlockText
			switch e.ContentBlock.Type {
			case "tool_use":
				kind = llm.BlockToolCall
			case "thinking":
				kind = llm.BlockReasoning
			}
			kinds[e.Index] = kind
			c = &llm.BlockStart{Index: e.Index, Kind: kind, ID: llm.CallID(e.ContentBlock.ID), Name: e.ContentBlock.Name}
		case "content_block_delta":
			switch e.Delta.Type {
			case "text_delta":
				c = &llm.TextDelta{Index: e.Index, Text: e.Delta.Text}
			case "thinking_delta":
				c = &llm.ReasoningDelta{Index: e.Index, Text: e.Delta.Thinking}
			case "signature_delta":
				c = &llm.ReasoningDelta{Index: e.Index, Signature: e.Delta.Signature}
			case "input_json_delta":
				c = &llm.ToolCallDelta{Index: e.Index, Args: e.Delta.PartialJSON}
			}
		case "content_block_stop":
			c = &llm.BlockEnd{Index: e.Index}
		case "message_delta":
			usage.Merge(e.Usage.llm())
			if !yield(&llm.UsageChunk{Usage: usage}, nil) {
				return false
			}
			reason := llm.FinishStop
			switch e.Delta.StopReason {
			case "tool_use":
				reason = llm.FinishToolCalls
			case "max_tokens":
				reason = llm.FinishMaxTokens
			}
			c = &llm.Finish{Reason: reason}
		case "error":
			return yield(nil, &llm.ProviderError{Kind: anthropicKind(0, e.Error.Type, e.Error.Message), Provider: "wire", Code: e.Error.Type, Message: e.Error.Message})
		}
		if c != nil && !yield(c, nil) {
			return false
		}
	}
	return true
}

type aUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

func (u aUsage) llm() llm.Usage {
	return llm.Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens,
		CacheWrite5m: u.CacheCreation.Ephemeral5m, CacheWrite1h: u.CacheCreation.Ephemeral1h}
}

type oUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (w *wireModel) readOpenAI(ctx context.Context, body io.Reader, yield func(llm.Chunk, error) bool) bool {
	var finish *llm.Finish
	calls := map[int]bool{}
	for ev, err := range events(body) {
		if err != nil {
			return yield(nil, streamErr(ctx, err))
		}
		if ev[1] == "[DONE]" {
			if finish != nil {
				return yield(finish, nil)
			}
			return true
		}
		var e struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *oUsage `json:"usage"`
			Error *struct {
				Type, Message string
				Code          *string
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
			return yield(nil, err)
		}
		if e.Error != nil {
			code := ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			return yield(nil, &llm.ProviderError{Kind: openaiKind(0, e.Error.Type, code), Provider: "wire", Code: code, Message: e.Error.Message})
		}
		if e.Usage != nil {
			u := llm.Usage{Input: e.Usage.PromptTokens - e.Usage.PromptTokensDetails.CachedTokens, Output: e.Usage.CompletionTokens, CacheRead: e.Usage.PromptTokensDetails.CachedTokens}
			if !yield(&llm.UsageChunk{Usage: u}, nil) {
				return false
			}
		}
		for _, ch := range e.Choices {
			d := ch.Delta
			if d.ReasoningContent != "" && !yield(&llm.ReasoningDelta{Index: 0, Text: d.ReasoningContent}, nil) {
				return false
			}
			if d.Content != "" && !yield(&llm.TextDelta{Index: 1, Text: d.Content}, nil) {
				return false
			}
			for _, tc := range d.ToolCalls {
				idx := 2 + tc.Index
				if !calls[idx] {
					calls[idx] = true
					if !yield(&llm.BlockStart{Index: idx, Kind: llm.BlockToolCall, ID: llm.CallID(tc.ID), Name: tc.Function.Name}, nil) {
						return false
					}
				}
				if tc.Function.Arguments != "" && !yield(&llm.ToolCallDelta{Index: idx, Args: tc.Function.Arguments}, nil) {
					return false
				}
			}
			if ch.FinishReason != nil {
				reason := llm.FinishStop
				switch *ch.FinishReason {
				case "tool_calls":
					reason = llm.FinishToolCalls
				case "length":
					reason = llm.FinishMaxTokens
				}
				finish = &llm.Finish{Reason: reason}
			}
		}
	}
	return true
}

func statusError(resp *http.Response, body []byte, openai bool) error {
	var e struct {
		Error struct {
			Type, Message string
			Code          *string
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	pe := &llm.ProviderError{Provider: "wire", StatusCode: resp.StatusCode, Message: e.Error.Message, Code: e.Error.Type}
	if ms, err := strconv.Atoi(resp.Header.Get("Retry-After-Ms")); err == nil {
		pe.RetryAfter = time.Duration(ms) * time.Millisecond
	}
	if openai {
		code := ""
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		pe.Kind = openaiKind(resp.StatusCode, e.Error.Type, code)
		pe.RequestID = resp.Header.Get("X-Request-Id")
	} else {
		pe.Kind = anthropicKind(resp.StatusCode, e.Error.Type, e.Error.Message)
		pe.RequestID = resp.Header.Get("Request-Id")
	}
	return pe
}

func anthropicKind(status int, typ, msg string) llm.ErrorKind {
	switch {
	case typ == "overloaded_error" || status == 529:
		return llm.ErrOverloaded
	case typ == "rate_limit_error":
		return llm.ErrRateLimited
	case typ == "billing_error":
		return llm.ErrQuota
	case typ == "authentication_error" || typ == "permission_error":
		return llm.ErrAuth
	case strings.Contains(msg, "prompt is too long"):
		return llm.ErrContextTooLong
	case typ == "invalid_request_error":
		return llm.ErrInvalidRequest
	}
	return llm.ErrServer
}

func openaiKind(status int, typ, code string) llm.ErrorKind {
	switch {
	case code == "insufficient_quota":
		return llm.ErrQuota
	case status == 429:
		return llm.ErrRateLimited
	case status == 503:
		return llm.ErrOverloaded
	case status == 401 || code == "invalid_api_key":
		return llm.ErrAuth
	case code == "context_length_exceeded":
		return llm.ErrContextTooLong
	case status == 400 || typ == "invalid_request_error":
		return llm.ErrInvalidRequest
	}
	return llm.ErrServer
}

func TestConformanceOverAnthropicWire(t *testing.T) {
	llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model {
		srv := llmtest.NewServer(t, m)
		return &wireModel{url: srv.URL, client: srv.Client()}
	})
}

func TestConformanceOverOpenAIWire(t *testing.T) {
	llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model {
		srv := llmtest.NewServer(t, m)
		return &wireModel{url: srv.URL, client: srv.Client(), openai: true}
	})
}
