package anthropic

import (
	"cmp"
	"slices"
	"time"

	"github.com/reinhq/rein/llm"
)

// Segments of the prompt, in the order the API reads it.
const (
	segTools = iota
	segSystem
	segMessages
)

// mark is a cache breakpoint: where it goes and its place in the prompt.
type mark struct {
	seg   int
	idx   int // tool, system section, or message index
	block int // block index in the message
	inner int // inner slot of a tool result; -1 for the block's own
	turn  int // for ordering: turn index (messages)
	pos   int // for ordering: slot position within the turn
	on    bool
	long  bool // 1-hour TTL asked for
	ttl1h bool // written with a 1-hour TTL
}

func (m *mark) same(o *mark) bool {
	return m.seg == o.seg && m.idx == o.idx && m.block == o.block && m.inner == o.inner
}

func isLong(h *llm.CacheHint) bool { return h != nil && h.TTL >= time.Hour }

// placeMarks decides the request's breakpoints: the explicit hints and,
// when req.Cache is set, the automatic ones: the last tool, the last
// system section, the newest message, and the previous user turn when
// there is room (a spot with an explicit hint keeps it). At most
// MaxCacheBreakpoints are kept: extras are dropped oldest message first,
// tools and system last, since they are the most stable prefix. A
// breakpoint before a 1-hour one is raised to 1 hour, as the API requires
// longer TTLs first. The messages' explicit hints are looked for only in
// messages known to carry one.
func (c *bodyCache) placeMarks(req *llm.Request) {
	ms := c.marks[:0]
	for i := range req.Tools {
		if h := req.Tools[i].Cache; h != nil {
			ms = append(ms, mark{seg: segTools, idx: i, inner: -1, on: true, long: isLong(h)})
		}
	}
	nsys := 0
	c.eachSystem(req.System, func(h *llm.CacheHint) {
		if h != nil {
			ms = append(ms, mark{seg: segSystem, idx: nsys, inner: -1, on: true, long: isLong(h)})
		}
		nsys++
	})
	for _, ti := range c.hinted {
		ms = c.hintedMarks(ms, ti)
	}
	if auto := req.Cache; auto != nil {
		add := func(m mark) {
			for i := range ms {
				if ms[i].same(&m) {
					return
				}
			}
			m.on, m.long = true, isLong(auto)
			ms = append(ms, m)
		}
		if k := len(c.tools); k > 0 {
			add(mark{seg: segTools, idx: k - 1, inner: -1})
		}
		if nsys > 0 {
			add(mark{seg: segSystem, idx: nsys - 1, inner: -1})
		}
		last := len(c.turns) - 1
		if m, ok := c.lastCacheable(last); ok {
			add(m)
		}
		if len(ms) < MaxCacheBreakpoints {
			for ti := last - 1; ti >= 0; ti-- {
				if c.turns[ti].role == llm.RoleUser {
					if m, ok := c.lastCacheable(ti); ok {
						add(m)
					}
					break
				}
			}
		}
	}
	slices.SortFunc(ms, func(a, b mark) int {
		return cmp.Or(cmp.Compare(a.seg, b.seg), cmp.Compare(a.turn, b.turn), cmp.Compare(a.pos, b.pos), cmp.Compare(a.idx, b.idx))
	})
	c.marks = limitMarks(ms)
}

// limitMarks drops the oldest message breakpoints, then the earliest,
// down to MaxCacheBreakpoints, sets the TTLs and returns those kept.
func limitMarks(ms []mark) []mark {
	n := len(ms)
	for _, messagesOnly := range []bool{true, false} {
		for i := 0; i < len(ms) && n > MaxCacheBreakpoints; i++ {
			if ms[i].on && (!messagesOnly || ms[i].seg == segMessages) {
				ms[i].on = false
				n--
			}
		}
	}
	long := false
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].on {
			long = long || ms[i].long
			ms[i].ttl1h = long
		}
	}
	return slices.DeleteFunc(ms, func(m mark) bool { return !m.on })
}

// eachSystem calls f with the hint of each system section sent: the
// request's, then the system messages' texts.
func (c *bodyCache) eachSystem(sections []llm.Text, f func(*llm.CacheHint)) {
	for i := range sections {
		if sections[i].Text != "" {
			f(sections[i].Cache)
		}
	}
	for _, mi := range c.sysMsgs {
		for _, b := range c.msgs[mi].blocks {
			f(b.hint)
		}
	}
}

// hintedMarks appends the explicit hints of turn ti, in prompt order.
func (c *bodyCache) hintedMarks(ms []mark, ti int) []mark {
	pos := 0
	c.eachBlock(ti, func(mi, bi int) {
		b := &c.msgs[mi].blocks[bi]
		for k, in := range b.inner {
			ms = append(ms, mark{seg: segMessages, idx: mi, block: bi, inner: k, turn: ti, pos: pos, on: true, long: isLong(in.hint)})
			pos++
		}
		if b.cc >= 0 {
			if b.hint != nil {
				ms = append(ms, mark{seg: segMessages, idx: mi, block: bi, inner: -1, turn: ti, pos: pos, on: true, long: isLong(b.hint)})
			}
			pos++
		}
	})
	return ms
}

// lastCacheable returns a mark on the last block of turn ti that can carry
// one (thinking blocks cannot).
func (c *bodyCache) lastCacheable(ti int) (mark, bool) {
	var m mark
	found := false
	pos := 0
	c.eachBlock(ti, func(mi, bi int) {
		b := &c.msgs[mi].blocks[bi]
		pos += len(b.inner)
		if b.cc >= 0 {
			m, found = mark{seg: segMessages, idx: mi, block: bi, inner: -1, turn: ti, pos: pos}, true
			pos++
		}
	})
	return m, found
}

// eachBlock calls f for each block of turn ti in wire order: in a user
// turn, tool results first.
func (c *bodyCache) eachBlock(ti int, f func(mi, bi int)) {
	t := c.turns[ti]
	for pass := 0; pass < 2; pass++ {
		for mi := t.from; mi < t.to; mi++ {
			e := &c.msgs[mi]
			if e.role != t.role {
				continue
			}
			for bi := range e.blocks {
				if t.sorted || e.blocks[bi].result == (pass == 0) {
					f(mi, bi)
				}
			}
		}
		if t.sorted {
			return
		}
	}
}
