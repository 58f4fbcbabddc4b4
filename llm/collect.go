package llm

import (
	"context"
	"errors"
	"iter"
)

// ErrIncomplete is returned by Collect when a stream ends with neither a
// Finish nor an error: the connection was most likely cut, and the
// response should not be trusted. Sending the request again may succeed.
var ErrIncomplete = errors.New("llm: the stream ended without a finish chunk; the response is incomplete, send the request again")

// Collect ranges over a stream and assembles the whole response. When the
// stream fails it returns the partial response with the error: text and
// reasoning so far, no tool calls (none of a failed response may run),
// the usage reported so far, and FinishAborted when the error is a
// context's, FinishError otherwise. A stream that ends without a Finish
// returns the partial response with ErrIncomplete.
func Collect(seq iter.Seq2[Chunk, error]) (*Response, error) {
	var a Assembler
	for c, err := range seq {
		if err != nil {
			finish := FinishError
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				finish = FinishAborted
			}
			return &Response{Message: a.Partial(), Usage: a.Usage(), Finish: finish}, err
		}
		a.Add(c)
	}
	if !a.Finished() {
		return &Response{Message: a.Partial(), Usage: a.Usage(), Finish: FinishAborted}, ErrIncomplete
	}
	return a.Response(), nil
}
