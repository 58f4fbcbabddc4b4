// Package wirebody holds what the provider adapters share to send request
// bodies built incrementally: the identity of a message between requests,
// and a body in pieces whose middle is shared with a cache, not copied.
package wirebody

import (
	"io"
	"net/http"

	"github.com/reinhq/rein/llm"
)

// Key identifies a message between requests. A message is taken to be
// unchanged while its parts slice is the same (same first element, same
// length), with the same role and provenance: requests must not be
// modified, and whatever edits a message (compaction, elision) gives it
// new parts. A Key keeps the message's parts alive.
type Key struct {
	parts *llm.Part
	n     int
	prov  *llm.Provenance
	role  llm.Role
}

// KeyOf returns m's key.
func KeyOf(m *llm.Message) Key {
	k := Key{n: len(m.Parts), prov: m.Provenance, role: m.Role}
	if len(m.Parts) > 0 {
		k.parts = &m.Parts[0]
	}
	return k
}

// Is reports whether m is the message k was taken from.
func (k *Key) Is(m *llm.Message) bool {
	return len(m.Parts) == k.n && m.Provenance == k.prov && m.Role == k.role && (k.n == 0 || &m.Parts[0] == k.parts)
}

// Role returns the role of the message k was taken from.
func (k *Key) Role() llm.Role { return k.role }

// Body is a request body in three pieces. Shared is kept by a cache that
// only appends to it, so the bytes a Body holds never change and several
// bodies may share them.
type Body struct {
	Head, Shared, Tail []byte
}

// Len returns the body's length in bytes.
func (b *Body) Len() int { return len(b.Head) + len(b.Shared) + len(b.Tail) }

// Bytes returns the body as one new slice.
func (b *Body) Bytes() []byte {
	out := make([]byte, 0, b.Len())
	out = append(out, b.Head...)
	out = append(out, b.Shared...)
	return append(out, b.Tail...)
}

// Reader returns a fresh reader over the body. Each Read fills as much of
// its buffer as the body has left, across the pieces, so a transport
// copying the body writes the full buffers it would write from one slice,
// not a short write at each seam.
func (b *Body) Reader() io.ReadCloser { return &reader{body: *b} }

// Sized is an SDK middleware, installed once on a client, that gives a
// request whose body is an unread Body's Reader the body's length and a way
// to read it again, as a byte slice body would have; other requests pass
// as they are. An SDK hands such a body on as an opaque reader, which
// net/http would otherwise send chunked.
func Sized(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if rd, ok := r.Body.(*reader); ok && rd.off == 0 {
		r.ContentLength = int64(rd.body.Len())
		r.GetBody = rd.again
	}
	return next(r)
}

// reader reads a Body's pieces in order as one stream.
type reader struct {
	body Body
	off  int // bytes read so far
}

func (r *reader) Read(p []byte) (int, error) {
	n, skip := 0, r.off
	for _, piece := range [...][]byte{r.body.Head, r.body.Shared, r.body.Tail} {
		if skip >= len(piece) {
			skip -= len(piece)
			continue
		}
		n += copy(p[n:], piece[skip:])
		skip = 0
		if n == len(p) {
			break
		}
	}
	r.off += n
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *reader) Close() error { return nil }

// again returns a fresh reader over the same body.
func (r *reader) again() (io.ReadCloser, error) { return r.body.Reader(), nil }
