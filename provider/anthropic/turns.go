package anthropic

import "github.com/reinhq/rein/llm"

// spanTurns merges consecutive messages of the same role into turns and
// lists the system messages and the turns with explicit hints. The turns
// that end before first, the first message not kept, stand, but for the
// last of them, which a new message may extend.
func (c *bodyCache) spanTurns(first int) {
	k := len(c.turns)
	for k > 0 && c.turns[k-1].to > first {
		k--
	}
	start := 0
	if k > 0 {
		k--
		start = c.turns[k].from
	}
	c.turns = c.turns[:k]
	c.trimSettled(k)
	for len(c.sysMsgs) > 0 && c.sysMsgs[len(c.sysMsgs)-1] >= start {
		c.sysMsgs = c.sysMsgs[:len(c.sysMsgs)-1]
	}
	for len(c.hinted) > 0 && c.hinted[len(c.hinted)-1] >= k {
		c.hinted = c.hinted[:len(c.hinted)-1]
	}
	seenOther := false
	for i := start; i < len(c.msgs); i++ {
		e := &c.msgs[i]
		if len(e.blocks) == 0 {
			continue
		}
		if e.role == llm.RoleSystem {
			c.sysMsgs = append(c.sysMsgs, i)
			continue
		}
		n := len(c.turns)
		if n == 0 || c.turns[n-1].role != e.role {
			c.turns = append(c.turns, turnSpan{role: e.role, from: i, sorted: true})
			n++
			seenOther = false
		}
		t := &c.turns[n-1]
		t.to = i + 1
		if t.role == llm.RoleUser && (!e.sorted || (seenOther && e.results)) {
			t.sorted = false
		}
		seenOther = seenOther || e.others
		if e.hinted && (len(c.hinted) == 0 || c.hinted[len(c.hinted)-1] != n-1) {
			c.hinted = append(c.hinted, n-1)
		}
	}
	c.trimSettled(len(c.turns) - settleMargin)
}

// settleMargin is how many of the newest turns stay out of the settled
// prefix: automatic breakpoints go on the newest turn and the previous
// user turn, and turns alternate between user and assistant.
const settleMargin = 3

// trimSettled shortens the settled prefix to at most n turns. The bytes
// are copied, not cut, as an earlier body may still be reading them.
func (c *bodyCache) trimSettled(n int) {
	n = max(n, 0)
	if c.settled <= n {
		return
	}
	end := 0
	if n > 0 {
		end = c.offs[n] - 1 // without the comma
	}
	c.prefix = append([]byte(nil), c.prefix[:end]...)
	c.offs = c.offs[:n]
	c.settled = n
}

// settle appends to the settled prefix the turns that no breakpoint can
// reach any more: all but the newest few, up to the first with an explicit
// hint.
func (c *bodyCache) settle() {
	limit := len(c.turns) - settleMargin
	if len(c.hinted) > 0 {
		limit = min(limit, c.hinted[0])
	}
	for c.settled < limit {
		if c.settled > 0 {
			c.prefix = append(c.prefix, ',')
		}
		c.offs = append(c.offs, len(c.prefix))
		c.prefix = c.appendTurn(c.prefix, c.settled)
		c.settled++
	}
}

// forget drops everything but the kept messages, after a failed request.
func (c *bodyCache) forget() {
	c.turns, c.sysMsgs, c.hinted, c.marks = c.turns[:0], c.sysMsgs[:0], c.hinted[:0], c.marks[:0]
	c.settled, c.prefix, c.offs = 0, nil, nil
}
