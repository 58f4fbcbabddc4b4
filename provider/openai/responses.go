package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// Responses is an llm.Model speaking OpenAI's Responses API
// (POST {BaseURL}/responses). Requests are stateless (store false): the
// history is sent in full and reasoning comes back encrypted so that it
// can be replayed. It is safe for concurrent use.
type Responses struct {
	cfg   *config
	convs wirebody.Conversations[itemCache]
}

// NewResponses returns a Responses API model. A nil opts means OpenAI
// with the key from $OPENAI_API_KEY.
func NewResponses(opts *Options) (*Responses, error) {
	cfg, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	return &Responses{cfg: cfg}, nil
}

// Provider returns the provider name used in errors and provenance.
func (r *Responses) Provider() string { return r.cfg.provider }

// Stream sends req and yields the response as chunks. Nothing is sent
// until the caller ranges; breaking out early closes the response body.
func (r *Responses) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		conv := r.convs.Lock(req)
		body, err := r.cfg.respBody(&conv.Cache, req)
		conv.Unlock()
		if err != nil {
			yield(nil, err)
			return
		}
		res, err := r.cfg.post(ctx, "responses", body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer res.Body.Close()
		d := newRespDecoder(r.cfg.provider, req.Model, requestID(res.Header))
		if err := d.run(res.Body, yield); err != nil && !errors.Is(err, errStopped) {
			yield(nil, streamFailure(ctx, r.cfg.provider, d.reqID, err))
		}
	}
}

// respEvent is every Responses stream event in one struct: each type
// fills the few fields it has.
type respEvent struct {
	Type         string        `json:"type"`
	Delta        string        `json:"delta"`
	OutputIndex  int           `json:"output_index"`
	SummaryIndex int           `json:"summary_index"`
	Item         *respItem     `json:"item"`
	Response     *respResponse `json:"response"`
	// The error event: fields at the top level, or nested under "error".
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}

type respItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

type respResponse struct {
	ID                string     `json:"id"`
	Model             string     `json:"model"`
	Usage             *respUsage `json:"usage"`
	Error             *apiError  `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

type respUsage struct {
	InputTokens        flexInt `json:"input_tokens"`
	OutputTokens       flexInt `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens flexInt `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens flexInt `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *respUsage) usage() llm.Usage {
	in := int64(u.InputTokens)
	var cached int64
	if d := u.InputTokensDetails; d != nil {
		cached = min(int64(d.CachedTokens), in)
	}
	r := llm.Usage{Input: in - cached, Output: int64(u.OutputTokens), CacheRead: cached}
	if d := u.OutputTokensDetails; d != nil {
		r.Reasoning = int64(d.ReasoningTokens)
	}
	return r
}

// respBlock is one output item being streamed.
type respBlock struct {
	output  int // the item's output_index
	block   int
	kind    llm.BlockKind
	id      string
	streamd bool // deltas arrived, so the done item adds nothing
	summary int  // last reasoning summary index seen
	closed  bool
}

// respDecoder turns Responses SSE events into chunks, separate from HTTP
// for tests, fuzzing and benchmarks.
type respDecoder struct {
	provider, model, reqID string
	respID                 string

	ev     respEvent
	json   eventJSON
	blocks []respBlock
	usage  llm.Usage
	filter bool
}

func newRespDecoder(provider, model, reqID string) *respDecoder {
	return &respDecoder{provider: provider, model: model, reqID: reqID}
}

func (d *respDecoder) run(r io.Reader, yield func(llm.Chunk, error) bool) error {
	sse := newSSEReader(r)
	for {
		_, data, err := sse.next()
		if err == io.EOF {
			return errTruncated
		}
		if err != nil {
			return err
		}
		if string(data) == "[DONE]" {
			return errTruncated // [DONE] is not part of this API; no completion came
		}
		if len(data) == 0 {
			continue
		}
		done, err := d.event(data, yield)
		if err != nil || done {
			return err
		}
	}
}

// event folds one event in; done means the response has ended.
func (d *respDecoder) event(data []byte, yield func(llm.Chunk, error) bool) (bool, error) {
	e := &d.ev
	*e = respEvent{}
	if err := d.json.decode(data, e); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return false, &llm.ProviderError{Kind: llm.ErrTransport, Provider: d.provider, RequestID: d.reqID,
				Message: "malformed stream event: " + err.Error(), Err: err}
		}
	}
	ok := true
	switch e.Type {
	case "response.created", "response.in_progress", "response.queued":
		d.noteResponse(e.Response)
	case "response.output_item.added":
		if it := e.Item; it != nil {
			switch it.Type {
			case "reasoning":
				b := d.open(e.OutputIndex, llm.BlockReasoning)
				b.id = it.ID
				ok = yield(&llm.BlockStart{Index: b.block, Kind: llm.BlockReasoning}, nil)
			case "message":
				b := d.open(e.OutputIndex, llm.BlockText)
				ok = yield(&llm.BlockStart{Index: b.block, Kind: llm.BlockText}, nil)
			case "function_call":
				b := d.open(e.OutputIndex, llm.BlockToolCall)
				b.id = it.CallID
				ok = yield(&llm.BlockStart{Index: b.block, Kind: llm.BlockToolCall, ID: llm.CallID(it.CallID), Name: it.Name}, nil) &&
					yield(&llm.ToolCallDelta{Index: b.block, ID: llm.CallID(it.CallID), Name: it.Name, Args: it.Arguments}, nil)
				b.streamd = it.Arguments != ""
			}
		}
	case "response.output_text.delta", "response.refusal.delta":
		if e.Type == "response.refusal.delta" {
			d.filter = true
		}
		b, fresh := d.find(e.OutputIndex, llm.BlockText)
		if fresh {
			ok = yield(&llm.BlockStart{Index: b.block, Kind: llm.BlockText}, nil)
		}
		b.streamd = true
		ok = ok && yield(&llm.TextDelta{Index: b.block, Text: e.Delta}, nil)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		b, fresh := d.find(e.OutputIndex, llm.BlockReasoning)
		if fresh {
			ok = yield(&llm.BlockStart{Index: b.block, Kind: llm.BlockReasoning}, nil)
		}
		text := e.Delta
		if e.Type == "response.reasoning_summary_text.delta" && e.SummaryIndex > b.summary {
			b.summary = e.SummaryIndex
			if b.streamd {
				text = "\n\n" + text // summaries are paragraphs
			}
		}
		b.streamd = true
		ok = ok && yield(&llm.ReasoningDelta{Index: b.block, Text: text}, nil)
	case "response.function_call_arguments.delta":
		b, fresh := d.find(e.OutputIndex, llm.BlockToolCall)
		if fresh {
			ok = yield(&llm.BlockStart{Index: b.block, Kind: llm.BlockToolCall}, nil)
		}
		b.streamd = true
		ok = ok && yield(&llm.ToolCallDelta{Index: b.block, Args: e.Delta}, nil)
	case "response.output_item.done":
		ok = d.itemDone(e.OutputIndex, e.Item, yield)
	case "response.completed", "response.incomplete":
		r := e.Response
		d.noteResponse(r)
		reason := llm.FinishStop
		if e.Type == "response.incomplete" {
			reason = llm.FinishMaxTokens
			if r != nil && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
				reason = llm.FinishFiltered
			}
		} else if d.filter {
			reason = llm.FinishFiltered
		} else if d.hasCalls() {
			reason = llm.FinishToolCalls // the API says "completed" either way
		}
		if r != nil && r.Usage != nil {
			d.usage = r.Usage.usage()
		}
		return true, d.end(reason, yield)
	case "response.failed":
		var ae apiError
		if r := e.Response; r != nil && r.Error != nil {
			ae = *r.Error
		}
		if ae.Message == "" {
			ae.Message = "the response failed with no reason given"
		}
		return false, streamError(d.provider, d.reqID, ae)
	case "error":
		ae := decodeErrorValue(e.Error)
		if ae.Message == "" {
			ae.Message = e.Message
		}
		if len(ae.Code) == 0 {
			ae.Code = e.Code
		}
		if ae.Message == "" && ae.code() == "" {
			ae.Message = "the server reported an error with no detail"
		}
		return false, streamError(d.provider, d.reqID, ae)
	}
	if !ok {
		return false, errStopped
	}
	return false, nil
}

func (d *respDecoder) noteResponse(r *respResponse) {
	if r == nil {
		return
	}
	if r.Model != "" {
		d.model = r.Model
	}
	if r.ID != "" {
		d.respID = r.ID
	}
}

func (d *respDecoder) hasCalls() bool {
	for i := range d.blocks {
		if d.blocks[i].kind == llm.BlockToolCall {
			return true
		}
	}
	return false
}

// open starts the block for an output item.
func (d *respDecoder) open(output int, kind llm.BlockKind) *respBlock {
	d.blocks = append(d.blocks, respBlock{output: output, block: len(d.blocks), kind: kind, summary: -1})
	return &d.blocks[len(d.blocks)-1]
}

// find returns the open block for an output item, opening one when the
// server sent a delta without announcing the item.
func (d *respDecoder) find(output int, kind llm.BlockKind) (*respBlock, bool) {
	for i := len(d.blocks) - 1; i >= 0; i-- {
		if b := &d.blocks[i]; b.output == output && !b.closed {
			if b.kind == kind {
				return b, false
			}
			break
		}
	}
	return d.open(output, kind), true
}

// itemDone fills in what deltas did not carry and closes the block.
func (d *respDecoder) itemDone(output int, it *respItem, yield func(llm.Chunk, error) bool) bool {
	if it == nil {
		return true
	}
	var kind llm.BlockKind
	switch it.Type {
	case "reasoning":
		kind = llm.BlockReasoning
	case "message":
		kind = llm.BlockText
	case "function_call":
		kind = llm.BlockToolCall
	default:
		return true
	}
	b, fresh := d.find(output, kind)
	if fresh && !yield(&llm.BlockStart{Index: b.block, Kind: kind}, nil) {
		return false
	}
	var c llm.Chunk
	switch kind {
	case llm.BlockReasoning:
		rd := &llm.ReasoningDelta{Index: b.block, Signature: it.ID, Redacted: it.EncryptedContent}
		if !b.streamd {
			for i, s := range it.Summary {
				if i > 0 {
					rd.Text += "\n\n"
				}
				rd.Text += s.Text
			}
		}
		c = rd
	case llm.BlockText:
		if !b.streamd {
			var text string
			for _, p := range it.Content {
				text += p.Text + p.Refusal
				if p.Refusal != "" {
					d.filter = true
				}
			}
			if text != "" {
				c = &llm.TextDelta{Index: b.block, Text: text}
			}
		}
	case llm.BlockToolCall:
		td := &llm.ToolCallDelta{Index: b.block, Name: it.Name}
		if b.id == "" {
			td.ID = llm.CallID(it.CallID)
		}
		if !b.streamd {
			td.Args = it.Arguments
		}
		c = td
	}
	if c != nil && !yield(c, nil) {
		return false
	}
	b.closed = true
	return yield(&llm.BlockEnd{Index: b.block}, nil)
}

// end closes what is open and yields usage, then the finish.
func (d *respDecoder) end(reason llm.FinishReason, yield func(llm.Chunk, error) bool) error {
	for i := range d.blocks {
		if b := &d.blocks[i]; !b.closed {
			b.closed = true
			if !yield(&llm.BlockEnd{Index: b.block}, nil) {
				return errStopped
			}
		}
	}
	if d.usage != (llm.Usage{}) && !yield(&llm.UsageChunk{Usage: d.usage}, nil) {
		return errStopped
	}
	prov := &llm.Provenance{Provider: d.provider, Model: d.model}
	if d.respID != "" {
		prov.State, _ = json.Marshal(struct {
			ResponseID string `json:"response_id"`
		}{d.respID})
	}
	if !yield(&llm.Finish{Reason: reason, Provenance: prov}, nil) {
		return errStopped
	}
	return nil
}
