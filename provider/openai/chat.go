package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// Chat is an llm.Model speaking the Chat Completions API
// (POST {BaseURL}/chat/completions) of OpenAI and of compatible servers.
// It is safe for concurrent use.
type Chat struct {
	cfg   *config
	convs wirebody.Conversations[itemCache]
}

// NewChat returns a Chat Completions model. A nil opts means OpenAI with
// the key from $OPENAI_API_KEY; a missing key is ErrNoAPIKey, naming the
// variable to set.
func NewChat(opts *Options) (*Chat, error) {
	cfg, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	return &Chat{cfg: cfg}, nil
}

// Provider returns the provider name used in errors and provenance.
func (c *Chat) Provider() string { return c.cfg.provider }

// Stream sends req and yields the response as chunks. Nothing is sent
// until the caller ranges; breaking out early closes the response body.
func (c *Chat) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		conv := c.convs.Lock(req)
		body, err := c.cfg.chatBody(&conv.Cache, req)
		conv.Unlock()
		if err != nil {
			yield(nil, err)
			return
		}
		res, err := c.cfg.post(ctx, "chat/completions", body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer res.Body.Close()
		d := newChatDecoder(c.cfg.provider, req.Model, requestID(res.Header))
		run := d.run
		if isJSON(res.Header.Get("Content-Type")) {
			run = d.runWhole // a server that ignored "stream": true
		}
		if err := run(res.Body, yield); err != nil && !errors.Is(err, errStopped) {
			yield(nil, streamFailure(ctx, c.cfg.provider, d.reqID, err))
		}
	}
}

// streamFailure passes provider errors through and turns read failures
// into transport errors, or into the context's error when it ended first.
func streamFailure(ctx context.Context, provider, reqID string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		return err
	}
	return transportError(ctx, provider, reqID, err)
}

// errStopped reports that the consumer stopped ranging; it is not shown.
var errStopped = errors.New("openai: consumer stopped")

// errTruncated is the read error of a stream that ended early.
var errTruncated = errors.New("stream ended before the response finished; the connection may have dropped")

// The Chat Completions stream chunk. Only what rein reads is declared.
type chatChunk struct {
	Model   knownString     `json:"model"`
	Choices []chatChoice    `json:"choices"`
	Usage   *chatUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Delta        chatDelta  `json:"delta"`
	Message      *chatDelta `json:"message"` // a whole, non-streamed answer
	FinishReason string     `json:"finish_reason"`
	Usage        *chatUsage `json:"usage"` // some servers put it here
}

type chatDelta struct {
	Content          flexText        `json:"content"`
	ReasoningContent flexText        `json:"reasoning_content"`
	Reasoning        flexText        `json:"reasoning"`
	Refusal          flexText        `json:"refusal"`
	ToolCalls        []chatDeltaCall `json:"tool_calls"`
}

type chatDeltaCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string   `json:"name"`
		Arguments flexArgs `json:"arguments"`
	} `json:"function"`
}

// flexArgs takes arguments as a JSON string (the standard) or, as some
// servers send them, as a JSON object.
type flexArgs string

// UnmarshalJSON implements json.Unmarshaler.
func (a *flexArgs) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = flexArgs(s)
		return nil
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		*a = flexArgs(b)
	}
	return nil
}

type chatUsage struct {
	PromptTokens         flexInt `json:"prompt_tokens"`
	CompletionTokens     flexInt `json:"completion_tokens"`
	InputTokens          flexInt `json:"input_tokens"`
	OutputTokens         flexInt `json:"output_tokens"`
	PromptCacheHitTokens flexInt `json:"prompt_cache_hit_tokens"` // DeepSeek
	PromptTokensDetails  *struct {
		CachedTokens flexInt `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens flexInt `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage normalises to llm.Usage: prompt_tokens includes the cached
// tokens, llm.Usage.Input does not.
func (u *chatUsage) usage() llm.Usage {
	prompt, out := int64(u.PromptTokens), int64(u.CompletionTokens)
	if prompt == 0 {
		prompt = int64(u.InputTokens)
	}
	if out == 0 {
		out = int64(u.OutputTokens)
	}
	cached := int64(u.PromptCacheHitTokens)
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
		cached = int64(d.CachedTokens)
	}
	cached = min(cached, prompt)
	r := llm.Usage{Input: prompt - cached, Output: out, CacheRead: cached}
	if d := u.CompletionTokensDetails; d != nil {
		r.Reasoning = int64(d.ReasoningTokens)
	}
	return r
}

func chatFinish(s string) llm.FinishReason {
	switch s {
	case "tool_calls", "function_call":
		return llm.FinishToolCalls
	case "length", "max_tokens", "model_length":
		return llm.FinishMaxTokens
	case "content_filter", "refusal", "safety":
		return llm.FinishFiltered
	}
	return llm.FinishStop
}

// chatCall tracks one streamed tool call.
type chatCall struct {
	index int    // the server's index
	id    string // the call id, once known
	block int
}

// chatDecoder turns Chat Completions SSE events into chunks. It is driven
// by run, separate from HTTP so that tests, fuzzing and benchmarks can feed
// it bytes directly.
type chatDecoder struct {
	provider, model, reqID string

	chunk  chatChunk
	json   eventJSON
	blocks int // blocks opened so far; the next block's index
	cur    int // the open text or reasoning block, -1 for none
	curK   llm.BlockKind
	calls  []chatCall
	open   []int // blocks to close at the end, in order

	usage      llm.Usage
	haveUsage  bool
	finish     llm.FinishReason
	finished   bool
	usageFinal bool // usage arrived with or after the finish
	refused    bool
}

func newChatDecoder(provider, model, reqID string) *chatDecoder {
	return &chatDecoder{provider: provider, model: model, reqID: reqID, cur: -1}
}

// run reads the stream to its end, yielding chunks. It returns errStopped
// when yield asked to stop, a *llm.ProviderError for an error the server
// sent, or a read error.
func (d *chatDecoder) run(r io.Reader, yield func(llm.Chunk, error) bool) error {
	sse := newSSEReader(r)
	sawDone := false
	for {
		_, data, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if string(data) == "[DONE]" {
			sawDone = true
			break
		}
		if len(data) == 0 {
			continue
		}
		done, err := d.event(data, yield)
		if err != nil {
			return err
		}
		if done {
			return d.end(yield)
		}
	}
	if !d.finished && !sawDone {
		return errTruncated
	}
	return d.end(yield)
}

// runWhole reads a non-streamed chat.completion (or an error object) and
// yields it as chunks, for servers that answer "stream": true with JSON.
func (d *chatDecoder) runWhole(r io.Reader, yield func(llm.Chunk, error) bool) error {
	body, err := io.ReadAll(io.LimitReader(r, maxEventSize+1))
	if err != nil {
		return err
	}
	if len(body) > maxEventSize {
		return errEventTooLarge
	}
	if _, err := d.event(body, yield); err != nil {
		return err
	}
	if !d.finished {
		return errTruncated
	}
	return d.end(yield)
}

func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// event folds one data payload in. It reports done when the response is
// complete: the finish has arrived and usage with or after it.
func (d *chatDecoder) event(data []byte, yield func(llm.Chunk, error) bool) (bool, error) {
	c := &d.chunk
	clear(c.Choices[:cap(c.Choices)])
	*c = chatChunk{Choices: c.Choices[:0], Model: knownString{&d.model}}
	if err := d.json.decode(data, c); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return false, &llm.ProviderError{Kind: llm.ErrTransport, Provider: d.provider, RequestID: d.reqID,
				Message: "malformed stream event: " + err.Error(), Err: err}
		}
		// A field of an unexpected type: keep what decoded.
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		e := decodeErrorValue(c.Error)
		if e.Message == "" && len(e.Code) == 0 {
			e.Message = string(c.Error)
		}
		return false, streamError(d.provider, d.reqID, e)
	}
	usageNow := false
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // rein asks for one choice
		}
		dl := &ch.Delta
		if ch.Message != nil {
			dl = ch.Message
		}
		if !d.delta(dl, yield) {
			return false, errStopped
		}
		if ch.Usage != nil {
			d.addUsage(ch.Usage)
			usageNow = true
		}
		if ch.FinishReason != "" {
			d.finish = chatFinish(ch.FinishReason)
			d.finished = true
		}
	}
	if c.Usage != nil {
		d.addUsage(c.Usage)
		usageNow = true
	}
	if usageNow && d.finished && d.haveUsage {
		d.usageFinal = true
	}
	return d.usageFinal, nil
}

func (d *chatDecoder) addUsage(u *chatUsage) {
	v := u.usage()
	if v == (llm.Usage{}) {
		return
	}
	d.usage.Merge(v)
	d.haveUsage = true
}

// delta emits the chunks of one choice delta; false means stop.
func (d *chatDecoder) delta(dl *chatDelta, yield func(llm.Chunk, error) bool) bool {
	reasoning := dl.ReasoningContent
	if reasoning == "" {
		reasoning = dl.Reasoning
	}
	if reasoning != "" {
		if !d.openFlow(llm.BlockReasoning, yield) || !yield(&llm.ReasoningDelta{Index: d.cur, Text: string(reasoning)}, nil) {
			return false
		}
	}
	text := dl.Content
	if dl.Refusal != "" {
		text += dl.Refusal
		d.refused = true
	}
	if text != "" {
		if !d.openFlow(llm.BlockText, yield) || !yield(&llm.TextDelta{Index: d.cur, Text: string(text)}, nil) {
			return false
		}
	}
	for i := range dl.ToolCalls {
		tc := &dl.ToolCalls[i]
		call, fresh := d.call(tc)
		if fresh {
			if !yield(&llm.BlockStart{Index: call.block, Kind: llm.BlockToolCall, ID: llm.CallID(tc.ID), Name: tc.Function.Name}, nil) {
				return false
			}
			// The first delta repeats id and name for consumers that
			// read deltas only.
			if !yield(&llm.ToolCallDelta{Index: call.block, ID: llm.CallID(tc.ID), Name: tc.Function.Name, Args: string(tc.Function.Arguments)}, nil) {
				return false
			}
			continue
		}
		if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
			continue
		}
		if !yield(&llm.ToolCallDelta{Index: call.block, ID: llm.CallID(tc.ID), Name: tc.Function.Name, Args: string(tc.Function.Arguments)}, nil) {
			return false
		}
	}
	return true
}

// call finds the streamed call a delta belongs to, opening a new one when
// needed. Servers that omit index continue the last call unless a new id
// appears; servers that reuse index 0 for every call are told apart by id.
func (d *chatDecoder) call(tc *chatDeltaCall) (*chatCall, bool) {
	idx := -1
	if tc.Index != nil {
		idx = *tc.Index
	}
	for i := len(d.calls) - 1; i >= 0; i-- {
		c := &d.calls[i]
		if idx >= 0 && c.index != idx {
			continue
		}
		if tc.ID != "" && c.id != "" && c.id != tc.ID {
			break // same index, another call
		}
		if tc.ID != "" {
			c.id = tc.ID
		}
		return c, false
	}
	if idx < 0 {
		idx = len(d.calls)
	}
	d.calls = append(d.calls, chatCall{index: idx, id: tc.ID, block: d.blocks})
	d.open = append(d.open, d.blocks)
	d.blocks++
	return &d.calls[len(d.calls)-1], true
}

// openFlow makes the current text/reasoning block one of kind k, closing
// the other kind's block when the stream switches between them.
func (d *chatDecoder) openFlow(k llm.BlockKind, yield func(llm.Chunk, error) bool) bool {
	if d.cur >= 0 && d.curK == k {
		return true
	}
	if d.cur >= 0 {
		if !yield(&llm.BlockEnd{Index: d.cur}, nil) {
			return false
		}
		d.removeOpen(d.cur)
	}
	d.cur, d.curK = d.blocks, k
	d.blocks++
	d.open = append(d.open, d.cur)
	return yield(&llm.BlockStart{Index: d.cur, Kind: k}, nil)
}

func (d *chatDecoder) removeOpen(i int) {
	for j, b := range d.open {
		if b == i {
			d.open = append(d.open[:j], d.open[j+1:]...)
			return
		}
	}
}

// end closes the open blocks and yields usage, then the finish.
func (d *chatDecoder) end(yield func(llm.Chunk, error) bool) error {
	for _, b := range d.open {
		if !yield(&llm.BlockEnd{Index: b}, nil) {
			return errStopped
		}
	}
	d.open = d.open[:0]
	if d.haveUsage && !yield(&llm.UsageChunk{Usage: d.usage}, nil) {
		return errStopped
	}
	reason := d.finish
	if !d.finished {
		reason = llm.FinishStop // [DONE] with no finish_reason
	}
	if reason == llm.FinishStop && d.refused {
		reason = llm.FinishFiltered
	}
	if reason == llm.FinishStop && len(d.calls) > 0 {
		reason = llm.FinishToolCalls // llama.cpp and others say "stop"
	}
	if !yield(&llm.Finish{Reason: reason, Provenance: &llm.Provenance{Provider: d.provider, Model: d.model}}, nil) {
		return errStopped
	}
	return nil
}
