package anthropic

import (
	"io"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// wireBody is a request body in three pieces. The middle one is the
// settled prefix, shared with the cache rather than copied: the cache only
// appends to it, so the bytes a body holds never change.
type wireBody struct {
	head, prefix, tail []byte
}

// Len returns the body's length in bytes.
func (w *wireBody) Len() int { return len(w.head) + len(w.prefix) + len(w.tail) }

// Bytes returns the body as one slice.
func (w *wireBody) Bytes() []byte {
	out := make([]byte, 0, w.Len())
	out = append(out, w.head...)
	out = append(out, w.prefix...)
	return append(out, w.tail...)
}

// reader returns a fresh reader over the body.
func (w *wireBody) reader() *bodyReader {
	return &bodyReader{segs: [3][]byte{w.head, w.prefix, w.tail}}
}

// sized returns an option that gives the HTTP request the body's length
// and a way to read it again, as a byte slice body would have.
func (w *wireBody) sized() option.RequestOption {
	return option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		r.ContentLength = int64(w.Len())
		r.GetBody = func() (io.ReadCloser, error) { return w.reader(), nil }
		return next(r)
	})
}

// bodyReader reads a wireBody's pieces in turn.
type bodyReader struct {
	segs [3][]byte
	i    int
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.segs) {
		k := copy(p[n:], r.segs[r.i])
		r.segs[r.i] = r.segs[r.i][k:]
		n += k
		if len(r.segs[r.i]) == 0 {
			r.i++
		}
	}
	if n == 0 && r.i == len(r.segs) {
		return 0, io.EOF
	}
	return n, nil
}

// Close implements io.Closer; there is nothing to release.
func (r *bodyReader) Close() error { return nil }
