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

// maxFirstChunks bounds what is kept per session: the responses the
// observer has not reached yet.
const maxFirstChunks = 8

// timeFirstChunk is model middleware: it notes, in the loop, when each
// response's first chunk arrived, so the chat span of the response can
// carry it. The chunks themselves never reach the observer. Only a
// stream read to its end without an error is noted: each is one logged
// response, so the observer pairs them in order; a failed attempt (one
// that is retried) and an abandoned stream leave no note.
func (o *Observer) timeFirstChunk(next llm.Model) llm.Model {
	return llm.ModelFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
		return func(yield func(llm.Chunk, error) bool) {
			var f firstChunk
			f.sent = time.Now()
			for c, err := range next.Stream(ctx, req) {
				if err != nil {
					yield(c, err)
					return
				}
				if f.first.IsZero() {
					f.first = time.Now()
				}
				if !yield(c, nil) {
					return
				}
			}
			if !f.first.IsZero() {
				o.noteFirstChunk(ctx, f)
			}
		}
	})
}

func (o *Observer) noteFirstChunk(ctx context.Context, f firstChunk) {
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
	o.first[sid] = append(fs, f)
}

// takeFirstChunk returns the time to first chunk of the session's oldest
// noted response, the one the observer has reached, which ended at end:
// a note from after end is a later response's, and is kept.
func (o *Observer) takeFirstChunk(sid session.ID, end time.Time) (time.Duration, bool) {
	fs := o.first[sid]
	if len(fs) == 0 || fs[0].first.After(end) {
		return 0, false
	}
	f := fs[0]
	if len(fs) == 1 {
		delete(o.first, sid)
	} else {
		o.first[sid] = append(fs[:0], fs[1:]...)
	}
	return f.first.Sub(f.sent), true
}
