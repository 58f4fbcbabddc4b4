// Package wirebody holds what the provider adapters share to send request
// bodies built incrementally: the identity of a message between requests,
// and a body in pieces whose middle is shared with a cache, not copied.
package wirebody

import (
	"bytes"
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

// Reader returns a fresh reader over the body.
func (b *Body) Reader() io.ReadCloser {
	return io.NopCloser(io.MultiReader(bytes.NewReader(b.Head), bytes.NewReader(b.Shared), bytes.NewReader(b.Tail)))
}

// Prepare gives an HTTP request whose body is b's Reader its length and a
// way to read it again, as a byte slice body would have.
func (b *Body) Prepare(r *http.Request) {
	r.ContentLength = int64(b.Len())
	r.GetBody = func() (io.ReadCloser, error) { return b.Reader(), nil }
}
