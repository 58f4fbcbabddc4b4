package anthropic

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/reinhq/rein/llm"
)

// maxEventSize bounds one server-sent event, so a hostile or broken
// stream cannot grow memory without limit.
const maxEventSize = 16 << 20

var (
	errNoStop      = errors.New("stream ended before message_stop")
	errEventTooBig = fmt.Errorf("stream event larger than %d bytes", maxEventSize)
)

// decodeError is a failure to understand the stream itself.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// streamError is an "error" event received after HTTP 200.
type streamError struct {
	Type    string
	Message string
}

func (e *streamError) Error() string { return e.Type + ": " + e.Message }

// wireUsage is the usage object of message_start and message_delta.
type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	// CacheCreation is a value, not a pointer: absent and zero read alike.
	CacheCreation struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

func (w *wireUsage) usage() llm.Usage {
	return llm.Usage{
		Input:        w.InputTokens,
		Output:       w.OutputTokens,
		CacheRead:    w.CacheReadInputTokens,
		CacheWrite:   w.CacheCreationInputTokens,
		CacheWrite5m: w.CacheCreation.Ephemeral5m,
		CacheWrite1h: w.CacheCreation.Ephemeral1h,
	}
}

// wireEvent is the union of the stream's event payloads; only the fields
// rein uses are decoded.
type wireEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Model string    `json:"model"`
		Usage wireUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage wireUsage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// blockState is what the decoder tracks of one content block.
type blockState struct {
	kind  llm.BlockKind // "" for blocks rein skips
	input string        // tool input sent whole at the block's start
}

// decoder turns a Messages API event stream into llm chunks.
type decoder struct {
	provider  string
	requestID string
	asked     names // of the request, which the stream repeats

	model  string
	usage  llm.Usage
	stop   string
	blocks []blockState  // by content block index
	first  [2]blockState // blocks' first backing, enough for most messages
	ev     wireEvent
	*buffers
}

// buffers are what a stream reads into, recycled when it ends.
type buffers struct {
	lines   *bufio.Reader
	long    []byte // a line longer than lines holds
	data    []byte // the event's data
	name    []byte // the event's "event:" field
	scratch []byte // fastEvent's, for unescaping
}

// keptBuffer is the largest buffer kept for the next stream: one huge
// event must not pin its memory.
const keptBuffer = 64 << 10

// release empties b for the next stream and drops its outsized buffers.
func (b *buffers) release() {
	b.lines.Reset(nil)
	for _, p := range []*[]byte{&b.long, &b.data, &b.name, &b.scratch} {
		if cap(*p) > keptBuffer {
			*p = nil
		}
		*p = (*p)[:0]
	}
}

// pool recycles the buffers of finished streams.
var pool = sync.Pool{New: func() any { return &buffers{lines: bufio.NewReaderSize(nil, 16<<10)} }}

// errStopped reports that the consumer stopped ranging.
var errStopped = errors.New("stopped")

// decode reads events from r and passes chunks to emit until message_stop
// (nil error), a failure, or emit returning false (errStopped).
func (d *decoder) decode(r io.Reader, emit func(llm.Chunk) bool) error {
	if d.blocks == nil {
		d.blocks = d.first[:0]
	}
	d.buffers = pool.Get().(*buffers)
	d.lines.Reset(r)
	defer func() {
		d.release()
		pool.Put(d.buffers)
		d.buffers = nil
	}()
	for {
		data, err := d.next()
		if err != nil {
			return err
		}
		done, err := d.handle(data, emit)
		if err != nil || done {
			return err
		}
	}
}

// next returns the data of the next event that has any.
func (d *decoder) next() ([]byte, error) {
	d.data, d.name = d.data[:0], d.name[:0]
	has := false
	for {
		line, err := d.line()
		if err != nil {
			if err == io.EOF {
				return nil, errNoStop
			}
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return d.data, nil
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
		case "event":
			d.name = append(d.name[:0], value...)
			continue
		default:
			continue // ids, retry hints and comments
		}
		if has {
			d.data = append(d.data, '\n')
		}
		if len(d.data)+len(value) > maxEventSize {
			return nil, &decodeError{errEventTooBig}
		}
		d.data = append(d.data, value...)
		has = true
	}
}

// line returns the next line without its line ending.
func (d *decoder) line() ([]byte, error) {
	line, err := d.lines.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		d.long = append(d.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = d.lines.ReadSlice('\n')
			d.long = append(d.long, line...)
			if len(d.long) > maxEventSize {
				return nil, &decodeError{errEventTooBig}
			}
		}
		line = d.long
	}
	if err != nil {
		// A last line without a newline is an unfinished event: dropped.
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// handle decodes one event and emits its chunks; done reports message_stop.
func (d *decoder) handle(data []byte, emit func(llm.Chunk) bool) (done bool, err error) {
	ev := &d.ev
	if !fastEvent(data, ev, &d.asked, &d.scratch) {
		*ev = wireEvent{}
		if err := json.Unmarshal(data, ev); err != nil {
			return false, &decodeError{fmt.Errorf("malformed stream event: %w", err)}
		}
	}
	if ev.Type == "" && string(d.name) == "error" {
		ev.Type = "error" // an error event whose payload lacks its type
	}
	ok := true
	switch ev.Type {
	case "message_start":
		d.model = ev.Message.Model
		d.usage.Merge(ev.Message.Usage.usage())
		ok = emit(&llm.UsageChunk{Usage: d.usage})
	case "content_block_start":
		cb := &ev.ContentBlock
		if cb.Type == "" || ev.Index < 0 || ev.Index > 1<<16 {
			return false, &decodeError{fmt.Errorf("malformed content_block_start")}
		}
		var kind llm.BlockKind
		switch cb.Type {
		case "text":
			kind = llm.BlockText
		case "thinking", "redacted_thinking":
			kind = llm.BlockReasoning
		case "tool_use":
			kind = llm.BlockToolCall
		}
		for len(d.blocks) <= ev.Index {
			d.blocks = append(d.blocks, blockState{})
		}
		bs := &d.blocks[ev.Index]
		*bs = blockState{kind: kind}
		if kind == llm.BlockToolCall {
			// The API sends {} here and the arguments as deltas; some
			// compatible servers send the whole input here instead.
			if in := bytes.TrimSpace(cb.Input); len(in) > 0 && string(in) != "{}" && string(in) != "null" {
				bs.input = string(in)
			}
		}
		if kind == "" {
			break // server tools and their results are not rein's to run
		}
		start := &llm.BlockStart{Index: ev.Index, Kind: kind}
		if kind == llm.BlockToolCall {
			start.ID, start.Name = llm.CallID(cb.ID), cb.Name
		}
		ok = emit(start)
		switch {
		case !ok:
		case cb.Type == "text" && cb.Text != "":
			ok = emit(&llm.TextDelta{Index: ev.Index, Text: cb.Text})
		case cb.Type == "thinking" && (cb.Thinking != "" || cb.Signature != ""):
			ok = emit(&llm.ReasoningDelta{Index: ev.Index, Text: cb.Thinking, Signature: cb.Signature})
		case cb.Type == "redacted_thinking":
			ok = emit(&llm.ReasoningDelta{Index: ev.Index, Redacted: cb.Data})
		}
	case "content_block_delta":
		dl := &ev.Delta
		if d.kind(ev.Index) == "" {
			break
		}
		switch dl.Type {
		case "text_delta":
			if dl.Text != "" {
				ok = emit(&llm.TextDelta{Index: ev.Index, Text: dl.Text})
			}
		case "thinking_delta":
			if dl.Thinking != "" {
				ok = emit(&llm.ReasoningDelta{Index: ev.Index, Text: dl.Thinking})
			}
		case "signature_delta":
			if dl.Signature != "" {
				ok = emit(&llm.ReasoningDelta{Index: ev.Index, Signature: dl.Signature})
			}
		case "input_json_delta":
			if dl.PartialJSON != "" {
				d.blocks[ev.Index].input = "" // the deltas carry the arguments
				ok = emit(&llm.ToolCallDelta{Index: ev.Index, Args: dl.PartialJSON})
			}
		}
	case "content_block_stop":
		if d.kind(ev.Index) != "" {
			if in := d.blocks[ev.Index].input; in != "" {
				d.blocks[ev.Index].input = ""
				if ok = emit(&llm.ToolCallDelta{Index: ev.Index, Args: in}); !ok {
					break
				}
			}
			ok = emit(&llm.BlockEnd{Index: ev.Index})
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			d.stop = ev.Delta.StopReason
		}
		d.usage.Merge(ev.Usage.usage())
		ok = emit(&llm.UsageChunk{Usage: d.usage})
	case "message_stop":
		if !emit(&llm.Finish{Reason: finishReason(d.stop), Provenance: &llm.Provenance{Provider: d.provider, Model: d.model}}) {
			return true, errStopped
		}
		return true, nil
	case "error":
		se := &streamError{Type: ev.Error.Type, Message: ev.Error.Message}
		if se.Type == "" {
			se.Type = "api_error"
		}
		if se.Message == "" {
			se.Message = "the stream reported an error without a message"
		}
		return false, se
	}
	if !ok {
		return false, errStopped
	}
	return false, nil
}

func (d *decoder) kind(index int) llm.BlockKind {
	if index < 0 || index >= len(d.blocks) {
		return ""
	}
	return d.blocks[index].kind
}

// finishReason maps a stop_reason to a FinishReason.
func finishReason(s string) llm.FinishReason {
	switch s {
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishMaxTokens
	case "refusal":
		return llm.FinishFiltered
	default: // end_turn, stop_sequence, pause_turn
		return llm.FinishStop
	}
}
