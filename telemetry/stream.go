package telemetry

import (
	"context"
	"iter"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// firstChunk is when one model request of a session was sent and when
// its first chunk came.
type firstChunk struct {
	sent, first time.Time
}

// maxFirstChunks bounds what is kept per session between two responses:
// the attempts of one request (its retries).
const maxFirstChunks = 8

// timeFirstChunk is model middleware: it notes when each request's first
// chunk arrives, in the loop, so the chat span of the response can carry
// it. The chunks themselves never reach the observer.
func (o *Observer) timeFirstChunk(next llm.Model) llm.Model {
	return llm.ModelFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
		return func(yield func(llm.Chunk, error) bool) {
			sent, noted := time.Now(), false
			for c, err := range next.Stream(ctx, req) {
				if !noted && err == nil {
					noted = true
					o.noteFirstChunk(ctx, sent, time.Now())
				}
				if !yield(c, err) {
					return
				}
			}
		}
	})
}

func (o *Observer) noteFirstChunk(ctx context.Context, sent, first time.Time) {
	a := agent.RunningAgent(ctx)
	if a == nil {
		return
	}
	sid := a.Session()
	o.mu.Lock()
	defer o.mu.Unlock()
	fs := o.first[sid]
	if len(fs) == maxFirstChunks {
		fs = append(fs[:0], fs[1:]...)
	}
	o.first[sid] = append(fs, firstChunk{sent, first})
}

// takeFirstChunk returns the time to first chunk of the response that
// ended at end — the last attempt whose first chunk came before it — and
// forgets the attempts up to it.
func (o *Observer) takeFirstChunk(sid session.ID, end time.Time) (time.Duration, bool) {
	fs := o.first[sid]
	n := 0
	for n < len(fs) && !fs[n].first.After(end) {
		n++
	}
	if n == 0 {
		return 0, false
	}
	last := fs[n-1]
	if rest := fs[n:]; len(rest) > 0 {
		o.first[sid] = append(fs[:0], rest...)
	} else {
		delete(o.first, sid)
	}
	return last.first.Sub(last.sent), true
}
