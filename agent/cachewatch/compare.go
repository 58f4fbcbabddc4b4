package cachewatch

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/reinhq/rein/llm"
)

// diffTools brings w.tools up to tools, hashing only definitions that are
// not the values the previous request carried, and notes in d when the
// list changed.
func (w *Watcher) diffTools(tools []llm.ToolSpec, d *Diff) {
	old := w.tools
	next := w.spare[:0]
	changed := len(tools) != len(old)
	w.toolBytes = 0
	for i := range tools {
		t := &tools[i]
		if i < len(old) && old[i].same(t) {
			next = append(next, old[i])
			w.toolBytes += old[i].size
			continue
		}
		h, n := w.x.tool(t)
		next = append(next, toolRec{name: t.Name, desc: t.Description, schema: unsafe.SliceData(t.Schema), slen: len(t.Schema), hash: h, size: n})
		w.toolBytes += n
		if i >= len(old) || old[i].hash != h {
			changed = true
		}
	}
	if changed && w.step > 1 {
		d.add(DimTools, toolsDetail(old, next))
	}
	clear(old) // release the previous request's schemas
	w.tools, w.spare = next, old[:0]
}

// toolsDetail says which tools were added, removed or changed.
func toolsDetail(old, next []toolRec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d → %d tools", len(old), len(next))
	byName := func(rs []toolRec) map[string]uint64 {
		m := make(map[string]uint64, len(rs))
		for _, r := range rs {
			m[r.name] = r.hash
		}
		return m
	}
	om, nm := byName(old), byName(next)
	var added, removed, changed []string
	for _, r := range next {
		if h, ok := om[r.name]; !ok {
			added = append(added, r.name)
		} else if h != r.hash {
			changed = append(changed, r.name)
		}
	}
	for _, r := range old {
		if _, ok := nm[r.name]; !ok {
			removed = append(removed, r.name)
		}
	}
	list := func(label string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(&b, "; %s %s", label, strings.Join(names, ", "))
		}
	}
	list("added", added)
	list("removed", removed)
	list("changed", changed)
	if len(added)+len(removed)+len(changed) == 0 {
		b.WriteString("; reordered")
	}
	return b.String()
}

func (w *Watcher) diffChoice(req *llm.Request, d *Diff) {
	var par int8
	if p := req.ParallelToolCalls; p != nil {
		par = 1
		if *p {
			par = 2
		}
	}
	if w.step > 1 && (req.ToolChoice != w.choice || par != w.parallel) {
		d.add(DimToolChoice, fmt.Sprintf("%s → %s", choiceString(w.choice, w.parallel), choiceString(req.ToolChoice, par)))
	}
	w.choice, w.parallel = req.ToolChoice, par
}

func choiceString(c llm.ToolChoice, par int8) string {
	s := string(c.Mode)
	if s == "" {
		s = "auto"
	}
	if c.Name != "" {
		s += " " + c.Name
	}
	switch par {
	case 1:
		s += ", no parallel calls"
	case 2:
		s += ", parallel calls"
	}
	return s
}

func (w *Watcher) section(i int) Section {
	s := Section{Index: i}
	if i < len(w.names) {
		s.Name = w.names[i]
	}
	return s
}

func (w *Watcher) diffSystem(sys []llm.Text, d *Diff) {
	old := w.system
	var details []string
	for i := range max(len(sys), len(old)) {
		if w.step == 1 {
			break // nothing to compare with
		}
		var what string
		switch {
		case i >= len(old):
			what = fmt.Sprintf("added (%d bytes)", len(sys[i].Text))
		case i >= len(sys):
			what = fmt.Sprintf("removed (%d bytes)", len(old[i]))
		case sys[i].Text != old[i]: // strings are immutable: equal pointers compare at once
			what = fmt.Sprintf("changed (%d → %d bytes)", len(old[i]), len(sys[i].Text))
		default:
			continue
		}
		s := w.section(i)
		d.Sections = append(d.Sections, s)
		label := fmt.Sprintf("section %d", i)
		if s.Name != "" {
			label += " " + s.Name
		}
		details = append(details, label+" "+what)
	}
	if len(details) > 0 {
		d.add(DimSystem, strings.Join(details, "; "))
	}
	w.sysBytes = 0
	w.system = w.system[:0]
	for i := range sys {
		w.system = append(w.system, sys[i].Text)
		w.sysBytes += len(sys[i].Text)
	}
	clear(w.system[len(w.system):cap(w.system)])
}

func (w *Watcher) diffReasoning(r *llm.ReasoningOptions, d *Diff) {
	var next llm.ReasoningOptions
	on := r != nil
	if on {
		next = *r
	}
	if w.step > 1 && (on != w.thinking || next != w.reasoning) {
		d.add(DimReasoning, reasoningString(w.thinking, w.reasoning)+" → "+reasoningString(on, next))
	}
	w.thinking, w.reasoning = on, next
}

func reasoningString(on bool, r llm.ReasoningOptions) string {
	if !on {
		return "off"
	}
	var parts []string
	if r.Effort != "" {
		parts = append(parts, "effort "+r.Effort)
	}
	if r.BudgetTokens != 0 {
		parts = append(parts, fmt.Sprintf("budget %d", r.BudgetTokens))
	}
	if r.Summary != "" {
		parts = append(parts, "summary "+r.Summary)
	}
	if len(parts) == 0 {
		return "provider default"
	}
	return strings.Join(parts, ", ")
}

// diffMessages brings w.msgs up to msgs, hashing only messages it has not
// seen, and records where msgs diverged from the previous request.
func (w *Watcher) diffMessages(msgs []llm.Message, d *Diff) {
	prev := len(w.msgs)
	n := len(msgs)
	shared := min(n, prev)
	start := 0
	data := unsafe.SliceData(msgs)
	if !w.checkAll && data != nil && data == w.msgData {
		// Same backing array: only the newest messages can have been
		// rewritten by an appending loop.
		start = max(shared-recheck, 0)
	}
	diverged := -1
	tail := max(prev-recheck, 0)
	for i := start; i < shared; i++ {
		m := &msgs[i]
		r := &w.msgs[i]
		if r.same(m, i >= tail) {
			continue
		}
		h, size := w.x.message(m)
		if h != r.hash && diverged < 0 {
			diverged = i
		}
		w.msgBytes += size - r.size
		*r = newMsgRec(m, h, size)
	}
	if n < prev {
		if diverged < 0 {
			diverged = n
		}
		for _, r := range w.msgs[n:] {
			w.msgBytes -= r.size
		}
		clear(w.msgs[n:])
		w.msgs = w.msgs[:n]
	}
	if n > cap(w.msgs) {
		// Doubling, where append grows a long slice by a quarter: the
		// records are rewritten a few times over, not a dozen.
		w.msgs = slices.Grow(w.msgs, max(n, 2*cap(w.msgs))-len(w.msgs))
	}
	for i := prev; i < n; i++ {
		m := &msgs[i]
		h, size := w.x.message(m)
		w.msgs = append(w.msgs, newMsgRec(m, h, size))
		w.msgBytes += size
	}
	w.msgData = data
	if diverged >= 0 && w.step > 1 {
		d.DivergedAt = diverged
		var detail string
		if diverged == n {
			detail = fmt.Sprintf("history cut from %d to %d messages", prev, n)
		} else {
			detail = fmt.Sprintf("message %d (%s) of %d rewritten", diverged, msgs[diverged].Role, prev)
			if n != prev {
				detail += fmt.Sprintf("; now %d messages", n)
			}
		}
		d.add(DimMessagePrefix, detail)
	}
}
