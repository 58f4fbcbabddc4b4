package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// itemCache keeps, for one conversation, each message's encoded wire items
// (Chat messages or Responses input items) and their concatenation, so
// that a request encodes only its new messages. The concatenation is only
// appended to, so a body shares it rather than copying it; when a message
// changes, what follows it is encoded again into a fresh buffer.
type itemCache struct {
	keys  []wirebody.Key
	ends  []int  // where each message's items end in items
	items []byte // every message's items, comma-separated
}

// update returns the items of msgs, encoding with enc those not kept from
// the last request. The slice returned is never written again.
func (c *itemCache) update(msgs []llm.Message, enc func(*itemWriter, *llm.Message) error) ([]byte, error) {
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
	if same < len(msgs) {
		// Written after the kept bytes, which stay as they are.
		w := newItemWriter(c.items)
		for i := same; i < len(msgs); i++ {
			if err := enc(w, &msgs[i]); err != nil {
				// Keep the messages before it, without its partial items.
				end := 0
				if len(c.ends) > 0 {
					end = c.ends[len(c.ends)-1]
				}
				c.items = w.buf.Bytes()[:end]
				return nil, fmt.Errorf("openai: message %d: %w", i, err)
			}
			c.keys, c.ends = append(c.keys, wirebody.KeyOf(&msgs[i])), append(c.ends, w.buf.Len())
		}
		c.items = w.buf.Bytes()
	}
	return c.items[:len(c.items):len(c.items)], nil
}

// itemWriter appends encoded wire items, comma-separated.
type itemWriter struct {
	buf     *bytes.Buffer
	scratch bytes.Buffer
	enc     *json.Encoder
}

func newItemWriter(after []byte) *itemWriter {
	w := &itemWriter{buf: bytes.NewBuffer(after)}
	w.enc = json.NewEncoder(&w.scratch)
	w.enc.SetEscapeHTML(false) // "<" in a prompt stays "<"
	return w
}

// encodeItems converts one message with conv, appending to scratch[:0],
// and writes its wire items; it returns scratch for the next message.
func encodeItems[T any](w *itemWriter, m *llm.Message, scratch []T, conv func([]T, *llm.Message) ([]T, error)) ([]T, error) {
	items, err := conv(scratch[:0], m)
	if err != nil || len(items) == 0 {
		return items, err
	}
	// The items are encoded as one array, whose brackets are dropped.
	w.scratch.Reset()
	if err := w.enc.Encode(items); err != nil {
		return items, fmt.Errorf("openai: encode request: %w", err)
	}
	b := w.scratch.Bytes()
	if w.buf.Len() > 0 {
		w.buf.WriteByte(',')
	}
	w.buf.Write(b[1 : len(b)-2]) // without "[" and "]\n"
	clear(items)                 // keep nothing of this message
	return items, nil
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
