package llm

import (
	"context"
	"iter"
)

// Model is the seam to a language model.
//
// Stream sends req and yields the response as chunks. It must not modify
// req, which the caller may reuse. No I/O happens until the caller ranges
// over the sequence; breaking out of the loop early releases the response
// body and any goroutine. An error is the last value yielded, and a failure
// of the provider is a *ProviderError. A Model is safe for concurrent use.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// ModelFunc adapts a function to the Model interface.
type ModelFunc func(ctx context.Context, req *Request) iter.Seq2[Chunk, error]

// Stream calls f(ctx, req).
func (f ModelFunc) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return f(ctx, req)
}

// Middleware wraps a model: it may look at or change each request and
// the chunks of its response, or answer without calling next.
type Middleware func(next Model) Model

// Wrap returns m wrapped by mws, the first listed outermost: it sees a
// request first and its response last. With none it returns m.
func Wrap(m Model, mws ...Middleware) Model {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			m = mws[i](m)
		}
	}
	return m
}

// TokenCounter is implemented by models that can count a request's input
// tokens exactly (usually with a call to the provider).
type TokenCounter interface {
	CountTokens(ctx context.Context, req *Request) (int64, error)
}

// Response is a whole, assembled model response.
type Response struct {
	Message Message
	Usage   Usage
	Finish  FinishReason
}
