package agent

import (
	"errors"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

type modelStatus int

const (
	modelOK modelStatus = iota
	modelCancelled
	modelFailed
)

// callModel sends req, retrying and falling back as the policy says. On
// cancellation it returns the assembler of the interrupted attempt (nil
// when the cancel came between attempts).
func (r *runState) callModel(req *llm.Request) (*llm.Assembler, modelStatus, error) {
	a := r.a
	ov := overflow{}
	for {
		asm, status, err := r.tryTarget(req, &ov)
		if status != modelFailed || err == r.fatal {
			return asm, status, err
		}
		if r.target+1 >= len(a.targets) || !canFallback(err) {
			return nil, modelFailed, err
		}
		t, next := a.targets[r.target], a.targets[r.target+1]
		a.log.Warn("falling back to the next model", "session", r.sid, "from", t.Provider+"/"+t.Model, "to", next.Provider+"/"+next.Model, "err", err)
		r.emit(&session.Fallback{FromProvider: t.Provider, FromModel: t.Model, ToProvider: next.Provider, ToModel: next.Model, Reason: err.Error()})
		r.target++
		a.target.Store(int32(r.target))
		r.header(false, "")
		if !r.flush() {
			return nil, modelFailed, r.fatal
		}
		nreq := *ov.req(req)
		nreq.Model = next.Model
		req, ov.smaller = &nreq, nil
	}
}

// tryTarget sends req to the current target until it succeeds, its
// retries are spent, or it fails in a way a retry cannot mend. A request
// the provider finds too long is compacted, then shrunk, and sent again
// without counting as a retry; ov keeps the smaller request.
func (r *runState) tryTarget(req *llm.Request, ov *overflow) (*llm.Assembler, modelStatus, error) {
	a := r.a
	for attempt := 1; ; attempt++ {
		if r.isCancelled() {
			return nil, modelCancelled, nil
		}
		req = ov.req(req)
		asm := &r.asm // reused: each attempt starts it anew
		asm.Reset()
		asm.IDPrefix, asm.Provenance = "", r.provs[r.target]
		r.watchBefore(req)
		err := r.stream(req)
		// A failed attempt's partial usage is judged too; a zero one
		// (nothing reported) is ignored by the watcher.
		r.watchAfter(asm.Usage())
		switch {
		case err == nil:
			return asm, modelOK, nil
		case r.isCancelled():
			return asm, modelCancelled, nil
		}
		var pe *llm.ProviderError
		if errors.As(err, &pe) && pe.Retryable() && attempt <= a.retry.MaxRetries {
			if !r.waitRetry(attempt, pe, err) {
				if r.fatal != nil {
					return nil, modelFailed, r.fatal
				}
				return nil, modelCancelled, nil
			}
			continue
		}
		if llm.KindOf(err) != llm.ErrContextTooLong {
			return nil, modelFailed, err
		}
		if r.fitWindow(req, ov) {
			attempt-- // a smaller request is not a retry
			continue
		}
		if r.fatal != nil {
			return nil, modelFailed, r.fatal
		}
		return nil, modelFailed, &overflowError{elided: r.w.elided(), compacted: ov.compacted, err: err}
	}
}

// waitRetry records a retry and waits its delay; false when the run was
// cancelled meanwhile or the record could not be written.
func (r *runState) waitRetry(attempt int, pe *llm.ProviderError, err error) bool {
	a := r.a
	delay := backoff(a.retry, attempt, pe.RetryAfter, a.opts.Jitter)
	a.log.Info("model request failed; retrying", "session", r.sid, "turn", r.turn, "attempt", attempt, "kind", pe.Kind, "status", pe.StatusCode, "delay", delay)
	r.emit(&session.Retry{Attempt: attempt, Kind: string(pe.Kind), Delay: delay, Error: err.Error()})
	if !r.flush() {
		return false
	}
	return a.opts.Sleep(r.ctx, delay) == nil && !r.isCancelled()
}

// canFallback reports whether another target may succeed where this one
// failed: not for a request the providers would all reject.
func canFallback(err error) bool {
	switch llm.KindOf(err) {
	case llm.ErrInvalidRequest, llm.ErrContextTooLong:
		return false
	}
	return true
}

// backoff is the delay before retry attempt: exponential from p.Base up to
// p.Max, jittered, at least retryAfter, at most p.MaxWait.
func backoff(p RetryPolicy, attempt int, retryAfter time.Duration, jitter func() float64) time.Duration {
	d := p.Base
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	if p.Jitter > 0 {
		d += time.Duration(float64(d) * p.Jitter * (2*jitter() - 1))
	}
	d = max(d, retryAfter)
	if p.MaxWait > 0 && d > p.MaxWait {
		d = p.MaxWait
	}
	return max(d, 0)
}

// bit maps a block index to a bit of a set; indexes past 62 share the
// last bit, which forces synthetic ids on (harmless for calls with one).
func bit(i int) uint64 {
	if i < 0 || i > 62 {
		return 1 << 63
	}
	return 1 << uint(i)
}

// stream plays one attempt into the run's assembler, giving deltas to the
// sink.
func (r *runState) stream(req *llm.Request) error {
	r.seen, r.streamErr = seenCalls{}, nil
	if r.onChunk == nil {
		r.onChunk = r.chunk // once a run: a method value is an allocation
	}
	r.models[r.target].Stream(r.ctx, req)(r.onChunk)
	err := r.streamErr
	if err == nil && !r.asm.Finished() {
		if err = r.ctx.Err(); err == nil {
			t := r.a.targets[r.target]
			err = &llm.ProviderError{Kind: llm.ErrTransport, Provider: t.Provider, Message: "the response stream ended without a finish"}
		}
	}
	// Calls that came without an id get synthetic ones unique to the step.
	if r.seen.calls&^r.seen.named != 0 || r.seen.calls&(1<<63) != 0 {
		r.asm.IDPrefix = string(r.turn) + "_" + itoa(r.step)
	}
	return err
}

// seenCalls are the tool-call block indexes of a response, and those
// given an id.
type seenCalls struct{ calls, named uint64 }

// chunk takes one chunk of the stream; false (with the stream's error
// kept) stops it.
func (r *runState) chunk(c llm.Chunk, err error) bool {
	if err != nil {
		r.streamErr = err
		return false
	}
	switch c := c.(type) {
	case *llm.BlockStart:
		if c.Kind == llm.BlockToolCall {
			r.seen.calls |= bit(c.Index)
			if c.ID != "" {
				r.seen.named |= bit(c.Index)
			}
		}
	case *llm.ToolCallDelta:
		r.seen.calls |= bit(c.Index)
		if c.ID != "" {
			r.seen.named |= bit(c.Index)
		}
	}
	r.meter.chunk(r.a.opts.Now)
	r.asm.Add(c)
	if r.listened() {
		if d, ok := deltaOf(c); ok {
			r.transient(&session.AssistantChunk{Step: r.step, Deltas: []session.ChunkDelta{d}})
		}
	}
	return true
}

// deltaOf is the transient delta a stream chunk is shown as.
func deltaOf(c llm.Chunk) (session.ChunkDelta, bool) {
	switch c := c.(type) {
	case *llm.TextDelta:
		return session.ChunkDelta{Index: c.Index, Kind: "text", Text: c.Text}, true
	case *llm.ReasoningDelta:
		return session.ChunkDelta{Index: c.Index, Kind: "reasoning", Text: c.Text}, true
	case *llm.ToolCallDelta:
		return session.ChunkDelta{Index: c.Index, Kind: "tool_call", Text: c.Args, ID: c.ID, Name: c.Name}, true
	case *llm.BlockStart:
		if c.Kind == llm.BlockToolCall {
			return session.ChunkDelta{Index: c.Index, Kind: "tool_call", ID: c.ID, Name: c.Name}, true
		}
	}
	return session.ChunkDelta{}, false
}
