package cachewatch_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
)

// step is one recorded request and the usage of its response.
type step struct {
	req   *llm.Request
	usage llm.Usage
}

// loadSteps reads an "httprr trace v1" of Anthropic Messages exchanges.
func loadSteps(t *testing.T, path string) []step {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const header = "httprr trace v1\n"
	if !bytes.HasPrefix(data, []byte(header)) {
		t.Fatalf("%s: not an httprr trace", path)
	}
	data = data[len(header):]
	var steps []step
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		var reqLen, respLen int
		if nl < 0 {
			t.Fatalf("%s: truncated record header", path)
		}
		if _, err := fmt.Sscanf(string(data[:nl]), "%d %d", &reqLen, &respLen); err != nil {
			t.Fatalf("%s: record header %q: %v", path, data[:nl], err)
		}
		data = data[nl+1:]
		if len(data) < reqLen+respLen {
			t.Fatalf("%s: truncated record", path)
		}
		rawReq, rawResp := data[:reqLen], data[reqLen:reqLen+respLen]
		data = data[reqLen+respLen:]

		hreq, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(rawReq)))
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		body.ReadFrom(hreq.Body)
		req, err := decodeAnthropicRequest(body.Bytes())
		if err != nil {
			t.Fatalf("%s: request %d: %v", path, len(steps), err)
		}
		hresp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rawResp)), hreq)
		if err != nil {
			t.Fatal(err)
		}
		body.Reset()
		body.ReadFrom(hresp.Body)
		steps = append(steps, step{req: req, usage: decodeAnthropicUsage(t, body.Bytes())})
	}
	return steps
}

// The subset of the Anthropic Messages request the recording uses.
type wireRequest struct {
	Model    string `json:"model"`
	System   json.RawMessage
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl *wireCache      `json:"cache_control"`
	} `json:"tools"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

type wireCache struct {
	TTL string `json:"ttl"`
}

type wireBlock struct {
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
	CacheControl *wireCache      `json:"cache_control"`
}

func hint(c *wireCache) *llm.CacheHint {
	if c == nil {
		return nil
	}
	if c.TTL == "1h" {
		return &llm.CacheHint{TTL: time.Hour}
	}
	return &llm.CacheHint{}
}

// blocks decodes content that is a string or an array of blocks.
func blocks(raw json.RawMessage) ([]wireBlock, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []wireBlock{{Type: "text", Text: s}}, nil
	}
	var bs []wireBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

func parts(bs []wireBlock) ([]llm.Part, error) {
	var out []llm.Part
	for _, b := range bs {
		switch b.Type {
		case "text":
			out = append(out, &llm.Text{Text: b.Text, Cache: hint(b.CacheControl)})
		case "thinking":
			out = append(out, &llm.Reasoning{Text: b.Thinking, Signature: b.Signature})
		case "tool_use":
			var args bytes.Buffer
			if err := json.Compact(&args, b.Input); err != nil {
				return nil, err
			}
			out = append(out, &llm.ToolCall{ID: llm.CallID(b.ID), Name: b.Name, Args: args.Bytes(), Cache: hint(b.CacheControl)})
		case "tool_result":
			ps, err := contentParts(b.Content)
			if err != nil {
				return nil, err
			}
			out = append(out, &llm.ToolResult{CallID: llm.CallID(b.ToolUseID), Parts: ps, IsError: b.IsError, Cache: hint(b.CacheControl)})
		default:
			return nil, fmt.Errorf("block type %q not decoded", b.Type)
		}
	}
	return out, nil
}

// contentParts decodes a content field, a string or blocks, to parts.
func contentParts(raw json.RawMessage) ([]llm.Part, error) {
	bs, err := blocks(raw)
	if err != nil {
		return nil, err
	}
	return parts(bs)
}

func decodeAnthropicRequest(body []byte) (*llm.Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, err
	}
	req := &llm.Request{Model: w.Model}
	if len(w.System) > 0 {
		bs, err := blocks(w.System)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			req.System = append(req.System, llm.Text{Text: b.Text, Cache: hint(b.CacheControl)})
		}
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, llm.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.InputSchema, Cache: hint(t.CacheControl)})
	}
	if w.Thinking != nil && w.Thinking.Type == "enabled" {
		req.Reasoning = &llm.ReasoningOptions{BudgetTokens: w.Thinking.BudgetTokens}
	}
	for _, m := range w.Messages {
		ps, err := contentParts(m.Content)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.Role(m.Role), Parts: ps})
	}
	return req, nil
}

// decodeAnthropicUsage folds the usage of a Messages event stream:
// message_start's, then message_delta's cumulative counts.
func decodeAnthropicUsage(t *testing.T, sse []byte) llm.Usage {
	t.Helper()
	type wireUsage struct {
		Input         int64 `json:"input_tokens"`
		Output        int64 `json:"output_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		Split         *struct {
			Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
	}
	var u llm.Usage
	for line := range strings.Lines(string(sse)) {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage *wireUsage `json:"usage"`
			} `json:"message"`
			Usage *wireUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		wu := ev.Usage
		if ev.Type == "message_start" {
			wu = ev.Message.Usage
		}
		if wu == nil {
			continue
		}
		v := llm.Usage{Input: wu.Input, Output: wu.Output, CacheRead: wu.CacheRead, CacheWrite: wu.CacheCreation}
		if wu.Split != nil {
			v.CacheWrite5m, v.CacheWrite1h = wu.Split.Ephemeral5m, wu.Split.Ephemeral1h
		}
		u.Merge(v)
	}
	return u
}

const cachingTrace = "langchaingo__anthropic_tool_results_caching_streaming.httprr"

func TestReplayRecordedCachingStream(t *testing.T) {
	steps := loadSteps(t, filepath.Join("testdata", cachingTrace))
	var reads []int64
	for _, s := range steps {
		reads = append(reads, s.usage.CacheRead)
	}
	if diff := cmp.Diff([]int64{0, 1881, 1953}, reads); diff != "" {
		t.Fatalf("recorded cache reads (-want +got):\n%s", diff)
	}

	c := newClock()
	w := cachewatch.New(&cachewatch.Options{Now: c.now})
	for i, s := range steps {
		c.advance(3 * time.Second)
		if d := w.Before(s.req); d != nil {
			t.Errorf("step %d: drift %v", i+1, d)
		}
		if b := w.After(s.usage); b != nil {
			t.Errorf("step %d: break %v", i+1, b)
		}
	}
	got := w.Stats()
	want := cachewatch.Stats{Requests: 3, Input: 12, CacheRead: 1881 + 1953, CacheWrite: 1881 + 72 + 37}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestReplayRecordedCachingStreamWithLostRead(t *testing.T) {
	steps := loadSteps(t, filepath.Join("testdata", cachingTrace))
	steps[1].usage.CacheRead = 0 // the provider lost the first step's prefix

	c := newClock()
	w := cachewatch.New(&cachewatch.Options{Now: c.now})
	var breaks []*cachewatch.Break
	for _, s := range steps {
		c.advance(3 * time.Second)
		w.Before(s.req)
		if b := w.After(s.usage); b != nil {
			breaks = append(breaks, b)
		}
	}
	want := []*cachewatch.Break{{
		Step: 2, Model: "claude-sonnet-4-5", Cause: cachewatch.CauseEviction,
		Diff:      cachewatch.Diff{DivergedAt: -1},
		CacheRead: 0, CacheWrite: 72,
		Expected: 1504, // 0.8 × (0 + 1881)
		Rebilled: 1881, // step 1 cached 1881 tokens; none were read back
		Pause:    3 * time.Second, TTL: 5 * time.Minute,
	}}
	// Step 3 is judged against step 2's 72 cached tokens and reads 1953:
	// healthy again.
	if diff := cmp.Diff(want, breaks); diff != "" {
		t.Errorf("breaks (-want +got):\n%s", diff)
	}
}
