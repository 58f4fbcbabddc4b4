package cachewatch_test

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
)

// benchHistory returns a request with n messages of a tool loop and room
// to append extra more without reallocating.
func benchHistory(n, extra int) *llm.Request {
	req := baseRequest(0)
	req.Messages = make([]llm.Message, 0, n+extra)
	for i := range n {
		req.Messages = append(req.Messages, message(i))
	}
	return req
}

// BenchmarkStep measures one step's Before+After: two new messages (a tool
// call and its result) on top of a history of about n messages. "append"
// grows one history slice, as rein's loop does; "copied" hands over a
// different slice of the same messages each step, so every message's
// identity is checked (none is hashed again). Every 500 steps the history
// is set back to n messages and a fresh Watcher primed with it, off the
// clock, so n stays the history size whatever b.N is.
func BenchmarkStep(b *testing.B) {
	const run = 500
	call, result := message(1), message(2)
	for _, mode := range []string{"append", "copied"} {
		for _, n := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/messages=%d", mode, n), func(b *testing.B) {
				var (
					req    *llm.Request
					other  []llm.Message
					w      *cachewatch.Watcher
					cached int64
				)
				b.ReportAllocs()
				for i := range b.N {
					if i%run == 0 {
						b.StopTimer()
						req = benchHistory(n, 2*run)
						other = append(make([]llm.Message, 0, n+2*run), req.Messages...)
						w = cachewatch.New(nil)
						w.Before(req)
						w.After(write(5000))
						cached = 5000
						b.StartTimer()
					}
					req.Messages = append(req.Messages, call, result)
					if mode == "copied" {
						other = append(other, call, result)
						req.Messages, other = other, req.Messages
					}
					if d := w.Before(req); d != nil {
						b.Fatalf("drift: %v", d)
					}
					if br := w.After(readWrite(cached, 100)); br != nil {
						b.Fatalf("break: %v", br)
					}
					cached += 100
				}
			})
		}
	}
}

// BenchmarkFirstRequest measures the one full hash of a history, when a
// Watcher first sees it (a resumed conversation).
func BenchmarkFirstRequest(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			req := benchHistory(n, 0)
			b.ReportAllocs()
			for range b.N {
				w := cachewatch.New(nil)
				w.Before(req)
			}
		})
	}
}
