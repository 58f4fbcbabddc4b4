package anthropic

import "github.com/reinhq/rein/llm"

// fastEvent decodes one stream event into ev without encoding/json's
// reflection. It reuses the strings a stream repeats (event and block
// types, the model and tool names the request named) instead of
// allocating them, and allocates only for ids, text and arguments. It
// accepts only what it can decode exactly as encoding/json would and
// reports ok=false for anything else (keys that are not plain lower case,
// numbers it does not read, malformed JSON), so the caller falls back to
// encoding/json and the result is always the same as its. scratch is a
// buffer for unescaping, kept between calls.
func fastEvent(data []byte, ev *wireEvent, names *names, scratch *[]byte) (ok bool) {
	s := scan{b: data, names: names, tmp: scratch}
	*ev = wireEvent{}
	if !s.object(func(k []byte) bool {
		switch string(k) {
		case "type":
			return s.str(&ev.Type, eventTypes)
		case "index":
			var n int64
			ok := s.int(&n)
			ev.Index = int(n)
			return ok && n == int64(ev.Index)
		case "message":
			return s.message(ev)
		case "content_block":
			return s.block(ev)
		case "delta":
			return s.delta(ev)
		case "usage":
			return s.usage(&ev.Usage)
		case "error":
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "type":
					return s.str(&ev.Error.Type, nil)
				case "message":
					return s.str(&ev.Error.Message, nil)
				}
				return s.ignore(k)
			})
		}
		return s.ignore(k)
	}) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// The strings a stream repeats, reused rather than allocated.
var (
	eventTypes = []string{"content_block_delta", "content_block_start", "content_block_stop",
		"message_start", "message_delta", "message_stop", "ping", "error"}
	blockTypes  = []string{"text", "tool_use", "thinking", "redacted_thinking"}
	deltaTypes  = []string{"text_delta", "input_json_delta", "thinking_delta", "signature_delta"}
	stopReasons = []string{"tool_use", "end_turn", "max_tokens", "stop_sequence", "pause_turn",
		"refusal", "model_context_window_exceeded"}
)

func (s *scan) message(ev *wireEvent) bool {
	m := &ev.Message
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "model":
			return s.strOf(&m.Model, nil, s.model(), nil)
		case "usage":
			return s.usage(&m.Usage)
		}
		return s.ignore(k)
	})
}

func (s *scan) block(ev *wireEvent) bool {
	cb := &ev.ContentBlock
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "type":
			return s.str(&cb.Type, blockTypes)
		case "id":
			return s.str(&cb.ID, nil)
		case "name":
			return s.strOf(&cb.Name, nil, "", s.tools())
		case "text":
			return s.str(&cb.Text, nil)
		case "thinking":
			return s.str(&cb.Thinking, nil)
		case "signature":
			return s.str(&cb.Signature, nil)
		case "data":
			return s.str(&cb.Data, nil)
		case "input":
			s.space()
			start := s.i
			if !s.skipValue(0) {
				return false
			}
			// The bytes stay the event's: the decoder reads them before the
			// next event overwrites data.
			cb.Input = s.b[start:s.i:s.i]
			return true
		}
		return s.ignore(k)
	})
}

func (s *scan) delta(ev *wireEvent) bool {
	dl := &ev.Delta
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "type":
			return s.str(&dl.Type, deltaTypes)
		case "text":
			return s.str(&dl.Text, nil)
		case "thinking":
			return s.str(&dl.Thinking, nil)
		case "signature":
			return s.str(&dl.Signature, nil)
		case "partial_json":
			return s.str(&dl.PartialJSON, nil)
		case "stop_reason":
			return s.str(&dl.StopReason, stopReasons)
		}
		return s.ignore(k)
	})
}

func (s *scan) usage(u *wireUsage) bool {
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "input_tokens":
			return s.int(&u.InputTokens)
		case "output_tokens":
			return s.int(&u.OutputTokens)
		case "cache_read_input_tokens":
			return s.int(&u.CacheReadInputTokens)
		case "cache_creation_input_tokens":
			return s.int(&u.CacheCreationInputTokens)
		case "cache_creation":
			cc := &u.CacheCreation
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "ephemeral_5m_input_tokens":
					return s.int(&cc.Ephemeral5m)
				case "ephemeral_1h_input_tokens":
					return s.int(&cc.Ephemeral1h)
				}
				return s.ignore(k)
			})
		}
		return s.ignore(k)
	})
}

// names are the strings of a request that its response repeats.
type names struct {
	model string
	tools []llm.ToolSpec
}

func (s *scan) model() string {
	if s.names == nil {
		return ""
	}
	return s.names.model
}

func (s *scan) tools() []llm.ToolSpec {
	if s.names == nil {
		return nil
	}
	return s.names.tools
}
