package cachewatch

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"

	"github.com/reinhq/rein/llm"
)

// seed is shared by every Watcher of the process, so hashes of the same
// content agree within a process; they are never persisted.
var seed = maphash.MakeSeed()

// hasher hashes request pieces without allocating and counts the bytes of
// content it saw, for Impact's position estimates. Cache hints are left
// out: moving a breakpoint does not change the cached prefix.
type hasher struct {
	h maphash.Hash
	n int
}

func (x *hasher) reset() {
	x.h.Reset()
	x.n = 0
}

func (x *hasher) num(v int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	x.h.Write(b[:])
}

// str writes s with its length, so "ab"+"c" and "a"+"bc" differ.
func (x *hasher) str(s string) {
	x.num(len(s))
	x.h.WriteString(s)
	x.n += len(s)
}

func (x *hasher) bytes(b []byte) {
	x.num(len(b))
	x.h.Write(b)
	x.n += len(b)
}

func (x *hasher) flag(v bool) {
	if v {
		x.h.WriteByte(1)
	} else {
		x.h.WriteByte(0)
	}
}

func (x *hasher) part(p llm.Part) {
	switch p := p.(type) {
	case *llm.Text:
		x.h.WriteByte('t')
		x.str(p.Text)
	case *llm.Reasoning:
		x.h.WriteByte('r')
		x.str(p.Text)
		x.str(p.Signature)
		x.str(p.Redacted)
	case *llm.ToolCall:
		x.h.WriteByte('c')
		x.str(string(p.ID))
		x.str(p.Name)
		x.bytes(p.Args)
	case *llm.ToolResult:
		x.h.WriteByte('R')
		x.str(string(p.CallID))
		x.flag(p.IsError)
		x.num(len(p.Parts))
		for _, q := range p.Parts {
			x.part(q)
		}
	case *llm.Image:
		x.media('i', p.MediaType, p.Data, p.URL)
	case *llm.Document:
		x.media('d', p.MediaType, p.Data, p.URL)
		x.str(p.Title)
	default: // nil
		x.h.WriteByte(0)
	}
}

// media hashes the content an image or document part carries inline or
// by reference, after the tag that tells the two apart.
func (x *hasher) media(tag byte, mediaType string, data []byte, url string) {
	x.h.WriteByte(tag)
	x.str(mediaType)
	x.bytes(data)
	x.str(url)
}

// message hashes m and returns the hash and m's content bytes.
func (x *hasher) message(m *llm.Message) (uint64, int) {
	x.reset()
	x.str(string(m.Role))
	x.num(len(m.Parts))
	for _, p := range m.Parts {
		x.part(p)
	}
	if pv := m.Provenance; pv != nil {
		x.flag(true)
		x.str(pv.Provider)
		x.str(pv.Model)
		x.bytes(pv.State)
	} else {
		x.flag(false)
	}
	return x.h.Sum64(), x.n
}

// tool hashes a tool definition and returns the hash and its bytes.
func (x *hasher) tool(t *llm.ToolSpec) (uint64, int) {
	x.reset()
	x.str(t.Name)
	x.str(t.Description)
	x.bytes(t.Schema)
	return x.h.Sum64(), x.n
}

// msgRec fingerprints one message of the previous request: its hash, its
// size, and enough of its identity to skip hashing it again when a later
// request carries the same Go value.
type msgRec struct {
	parts *llm.Part // the Parts backing array; keeps it alive, so the address is not reused
	last  llm.Part
	prov  *llm.Provenance
	n     int
	role  llm.Role
	hash  uint64
	size  int
}

func newMsgRec(m *llm.Message, hash uint64, size int) msgRec {
	r := msgRec{parts: unsafe.SliceData(m.Parts), prov: m.Provenance, n: len(m.Parts), role: m.Role, hash: hash, size: size}
	if r.n > 0 {
		r.last = m.Parts[r.n-1]
	}
	return r
}

// same reports whether m is the very value r was taken from: the same
// Parts backing array and length, Provenance and role. With tail set it
// also compares the last part (a pointer comparison), for the newest
// messages, whose parts a loop may still be filling in; elsewhere that
// extra memory load per message is not worth it.
func (r *msgRec) same(m *llm.Message, tail bool) bool {
	return r.n == len(m.Parts) && r.parts == unsafe.SliceData(m.Parts) && r.prov == m.Provenance &&
		r.role == m.Role && (!tail || r.n == 0 || r.last == m.Parts[r.n-1])
}

// toolRec fingerprints one tool definition.
type toolRec struct {
	name, desc string
	schema     *byte
	slen       int
	hash       uint64
	size       int
}

func (r *toolRec) same(t *llm.ToolSpec) bool {
	return r.slen == len(t.Schema) && r.schema == unsafe.SliceData(t.Schema) && r.name == t.Name && r.desc == t.Description
}
