package llmtest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// ErrScriptExhausted is wrapped by the error a Model yields when a request
// arrives and no scripted Entry is left for it.
var ErrScriptExhausted = errors.New("llmtest: script exhausted")

// Provider is the provider name the scripted Model puts on the Finish
// chunks its builders make.
const Provider = "llmtest"

// Model is a scripted llm.Model: each Stream call, once ranged over,
// consumes the next Entry and plays it, and records the request. A Model
// is safe for concurrent use; concurrent streams take entries in the order
// they start.
//
// Recording costs O(1) per request, whatever the length of the history, so
// the Model can drive benchmarks of long sessions: it keeps a copy of the
// Request struct and shares its messages and parts, which the llm.Model
// contract lets callers reuse but not change in place. Requests deep-copies
// them when called.
type Model struct {
	mu      sync.Mutex
	entries []Entry
	next    int
	reqs    []*llm.Request
	active  int           // streams being played
	idle    chan struct{} // closed and replaced when active drops to 0
}

// NewModel returns a Model that plays entries in order.
func NewModel(entries ...Entry) *Model {
	return &Model{entries: append([]Entry(nil), entries...)}
}

// Add appends entries to the script.
func (m *Model) Add(entries ...Entry) {
	m.mu.Lock()
	m.entries = append(m.entries, entries...)
	m.mu.Unlock()
}

// Requests returns deep copies of the requests received so far, in order;
// changing them changes nothing in the Model.
func (m *Model) Requests() []*llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*llm.Request, len(m.reqs))
	for i, r := range m.reqs {
		out[i] = r.Clone()
	}
	return out
}

// Calls returns how many streams have started, that is how many requests
// the Model has received.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// Remaining returns how many scripted entries have not been used yet.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries) - m.next
}

// Stream implements llm.Model. Nothing happens until the caller ranges;
// breaking early ends the stream at once.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		e, err := m.take(req)
		if err != nil {
			yield(nil, err)
			return
		}
		defer m.release()
		play(ctx, req, e, yield)
	}
}

// take records req and returns the next entry, resolved against it, and
// marks a stream active. The caller must call release when err is nil.
func (m *Model) take(req *llm.Request) (Entry, error) {
	m.mu.Lock()
	rec := *req // O(1): top-level fields copied, history shared
	m.reqs = append(m.reqs, &rec)
	n := len(m.reqs)
	if m.next >= len(m.entries) {
		m.mu.Unlock()
		return Entry{}, fmt.Errorf("%w: call %d has no entry; the last request ended with: %s; add entries with NewModel or Add",
			ErrScriptExhausted, n, describeLast(req))
	}
	e := m.entries[m.next]
	m.next++
	m.active++
	m.mu.Unlock()
	// Respond runs outside the lock so it may call Add or Requests.
	return e.resolve(req), nil
}

func (m *Model) release() {
	m.mu.Lock()
	m.active--
	if m.active == 0 && m.idle != nil {
		close(m.idle)
		m.idle = nil
	}
	m.mu.Unlock()
}

// waitIdle blocks until no stream is being played or ctx is done.
func (m *Model) waitIdle(ctx context.Context) error {
	for {
		m.mu.Lock()
		if m.active == 0 {
			m.mu.Unlock()
			return nil
		}
		if m.idle == nil {
			m.idle = make(chan struct{})
		}
		ch := m.idle
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// play yields e's chunks and its ending. It checks ctx before every chunk,
// as a real stream would notice a closed connection.
func play(ctx context.Context, req *llm.Request, e Entry, yield func(llm.Chunk, error) bool) {
	if e.delay > 0 {
		if err := sleep(ctx, e.delay); err != nil {
			yield(nil, err)
			return
		}
	}
	for _, c := range e.chunks {
		if err := ctx.Err(); err != nil {
			yield(nil, cancelled(ctx))
			return
		}
		if f, ok := c.(*llm.Finish); ok && e.provenance && f.Provenance == nil {
			c = &llm.Finish{Reason: f.Reason, Provenance: &llm.Provenance{Provider: Provider, Model: req.Model}}
		}
		if !yield(c, nil) {
			return
		}
	}
	switch e.end {
	case endHang:
		<-ctx.Done()
		yield(nil, cancelled(ctx))
	case endFail:
		err := e.err
		if err == nil {
			err = errors.New("llmtest: scripted failure")
		}
		yield(nil, err)
	}
}

// cancelled wraps the context's error, naming its cause when there is one.
func cancelled(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("llmtest: stream ended: %w (cause: %w)", err, cause)
	}
	return fmt.Errorf("llmtest: stream ended: %w", err)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return cancelled(ctx)
	}
}

// describeLast summarises the last message of req for an error message.
func describeLast(req *llm.Request) string {
	if req == nil || len(req.Messages) == 0 {
		return "no messages"
	}
	msg := req.Messages[len(req.Messages)-1]
	var b strings.Builder
	b.WriteString(string(msg.Role))
	b.WriteString(" message [")
	for i, p := range msg.Parts {
		if i > 0 {
			b.WriteString(", ")
		}
		switch p := p.(type) {
		case *llm.Text:
			fmt.Fprintf(&b, "text %q", clip(p.Text, 60))
		case *llm.ToolCall:
			fmt.Fprintf(&b, "tool call %s %s", p.ID, p.Name)
		case *llm.ToolResult:
			fmt.Fprintf(&b, "tool result %s", p.CallID)
			if p.IsError {
				b.WriteString(" (error)")
			}
			for _, q := range p.Parts {
				if t, ok := q.(*llm.Text); ok {
					fmt.Fprintf(&b, " %q", clip(t.Text, 60))
					break
				}
			}
		case nil:
			b.WriteString("nil")
		default:
			b.WriteString(p.PartType())
		}
	}
	b.WriteString("]")
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
