package jsonl

import (
	"bytes"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/session"
)

// lineDecoder decodes the lines of one session file in order. It shares
// the header strings of packed lines from one to the next, as
// session.Decoder does for event lines.
type lineDecoder struct {
	dec  session.Decoder
	prev [5]string // session, turn, run, parent_run and agent of the last packed line
}

// packedKeys are the optional header keys of a packed line, in the order
// encodePacked writes them, each with the comma before it.
var packedKeys = [5]string{`,"session":`, `,"turn":`, `,"run":`, `,"parent_run":`, `,"agent":`}

// packedFast reads a packed line laid out exactly as encodePacked writes
// it, with header strings that need no unescaping, and appends its
// events to dst. ok is false for any other line, which encoding/json
// then decides on.
func (d *lineDecoder) packedFast(dst []session.Event, line []byte) (_ []session.Event, ok bool) {
	c := cutter{b: line}
	pack, seq := c.int(`{"pack":`), c.int(`,"seq":`)
	var t time.Time
	if !c.lit(`,"time":`) || t.UnmarshalJSON(c.plain()) != nil {
		return dst, false
	}
	var h [5]string
	for k, key := range packedKeys {
		if c.lit(key) {
			q := c.plain()
			if len(q) <= 2 { // encodePacked omits empty strings
				return dst, false
			}
			if h[k] = d.prev[k]; h[k] != string(q[1:len(q)-1]) {
				h[k] = string(q[1 : len(q)-1])
				d.prev[k] = h[k]
			}
		}
	}
	// Each event takes at least two bytes of the line, which bounds pack.
	if c.bad || !c.lit(`,"type":"`+session.TypeAssistantChunk+`","dt":[`) || pack < 1 || pack > int64(len(line)) {
		return dst, false
	}
	first := len(dst)
	for k := int64(0); k < pack; k++ {
		if k > 0 && !c.lit(",") {
			return dst[:first], false
		}
		dt := c.signed()
		dst = append(dst, session.Event{
			Seq: seq + k, Time: t.Add(time.Duration(dt)),
			Session: session.ID(h[0]), Turn: session.TurnID(h[1]), Run: session.RunID(h[2]),
			ParentRun: session.RunID(h[3]), Agent: h[4],
		})
	}
	if !c.lit(`],"data":[`) {
		return dst[:first], false
	}
	for k := range dst[first:] {
		if k > 0 && !c.lit(",") {
			return dst[:first], false
		}
		end, ok := valueEnd(c.b, c.i)
		if c.bad || !ok || c.b[c.i] != '{' {
			return dst[:first], false
		}
		p, err := session.DecodePayload(session.TypeAssistantChunk, c.b[c.i:end])
		if err != nil {
			return dst[:first], false
		}
		dst[first+k].Data = p
		c.i = end
	}
	if !c.lit("]}") || c.bad || c.i != len(line) {
		return dst[:first], false
	}
	return dst, true
}

// cutter reads the fixed layout of a line this package writes. A read
// that meets anything else sets bad, and every later read fails.
type cutter struct {
	b   []byte
	i   int
	bad bool
}

// lit consumes s if the line goes on with it.
func (c *cutter) lit(s string) bool {
	if c.bad || !bytes.HasPrefix(c.b[c.i:], []byte(s)) {
		return false
	}
	c.i += len(s)
	return true
}

// int reads key and the non-negative integer after it.
func (c *cutter) int(key string) int64 {
	if !c.lit(key) {
		c.bad = true
		return 0
	}
	return c.digits()
}

// signed reads an integer that may be negative.
func (c *cutter) signed() int64 {
	if c.lit("-") {
		return -c.digits()
	}
	return c.digits()
}

// digits reads up to 18 digits without a leading zero.
func (c *cutter) digits() int64 {
	if c.bad {
		return 0
	}
	n, rest, ok := leadingInt(c.b[c.i:])
	read := len(c.b) - c.i - len(rest)
	if !ok || (c.b[c.i] == '0' && read > 1) || (len(rest) > 0 && (rest[0] >= '0' && rest[0] <= '9' || rest[0] == '.' || rest[0] == 'e' || rest[0] == 'E')) {
		c.bad = true
		return 0
	}
	c.i += read
	return n
}

// plain reads a string without escapes or invalid UTF-8 and returns it
// with its quotes.
func (c *cutter) plain() []byte {
	if c.bad || c.i >= len(c.b) || c.b[c.i] != '"' {
		c.bad = true
		return nil
	}
	end := bytes.IndexByte(c.b[c.i+1:], '"')
	if end < 0 {
		c.bad = true
		return nil
	}
	q := c.b[c.i : c.i+end+2]
	ascii := true
	for _, b := range q[1 : len(q)-1] {
		if b < 0x20 || b == '\\' {
			c.bad = true
			return nil
		}
		ascii = ascii && b < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(q) {
		c.bad = true
		return nil
	}
	c.i += len(q)
	return q
}
