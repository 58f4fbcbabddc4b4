package openai

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// itemCache keeps, for one conversation, each message's encoded wire items
// (Chat messages or Responses input items) and their concatenation, so
// that a request encodes only its new messages. The concatenation is only
// appended to, so a body shares it rather than copying it; when a message
// changes, what follows it is encoded again into a fresh buffer.
type itemCache struct {
	mu    sync.Mutex
	keys  []wirebody.Key
	ends  []int  // where each message's items end in items
	items []byte // every message's items, comma-separated
}

// update returns the items of msgs, encoding with enc those not kept from
// the last request. The slice returned is never written again.
func (c *itemCache) update(msgs []llm.Message, enc func(*llm.Message) ([]byte, error)) ([]byte, error) {
	same := 0
	for same < len(msgs) && same < len(c.keys) && c.keys[same].Is(&msgs[same]) {
		same++
	}
	if same < len(c.keys) {
		end := 0
		if same > 0 {
			end = c.ends[same-1]
		}
		c.items = append([]byte(nil), c.items[:end]...)
		c.keys, c.ends = c.keys[:same], c.ends[:same]
	}
	for i := same; i < len(msgs); i++ {
		m := &msgs[i]
		b, err := enc(m)
		if err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
		if len(b) > 0 {
			if len(c.items) > 0 {
				c.items = append(c.items, ',')
			}
			c.items = append(c.items, b...)
		}
		c.keys, c.ends = append(c.keys, wirebody.KeyOf(m)), append(c.ends, len(c.items))
	}
	return c.items[:len(c.items):len(c.items)], nil
}

// encodeItems converts one message with conv and encodes its wire items,
// comma-separated.
func encodeItems[T any](m *llm.Message, conv func([]T, *llm.Message) ([]T, error)) ([]byte, error) {
	items, err := conv(nil, m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := marshal(it)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// assemble makes a body of head, the items, and rest: the request's other
// fields, encoded as an object whose opening brace is dropped.
func assemble(head, items []byte, comma bool, rest any) (wirebody.Body, error) {
	b, err := marshal(rest)
	if err != nil {
		return wirebody.Body{}, err
	}
	if comma && len(items) > 0 {
		head = append(head, ',')
	}
	tail := append([]byte("],"), b[1:]...)
	return wirebody.Body{Head: head, Shared: items, Tail: tail}, nil
}
