package session

import (
	"html"
	"slices"
	"strings"

	"github.com/reinhq/rein/llm"
)

// Derive returns the model input a session log stands for: the one
// projection from events to messages. It feeds events to a new Deriver
// and returns its Messages, so the rules are on Deriver.
func Derive(events []Event) []llm.Message {
	var d Deriver
	n := 0
	for i := range events {
		switch events[i].Data.(type) {
		case *UserMessage, *ContextMessage, *SteeringMessage, *AssistantMessage, *ToolResult:
			n++
		}
	}
	d.out = make([]llm.Message, 0, n/2+1)
	d.Add(events...)
	return d.Messages()
}

// Deriver folds events into messages incrementally: each Add costs time
// proportional to the events added (a compaction rebuilds the view once),
// never to the whole history. The zero value is ready to use. A Deriver is
// not safe for concurrent use.
//
// The projection:
//
//   - user.message becomes a user message of its parts.
//   - context.message becomes user-role content framed as context, not as a
//     prompt: its text inside <context source="SOURCE"> … </context>, then
//     any non-text parts.
//   - steering.message becomes user-role content whose text follows a note
//     saying it arrived while the model worked: "[The user sent this
//     message while you were working.]" (for source user, steer or none) or
//     "[Note from SOURCE, added while you were working.]".
//   - assistant.message becomes an assistant message with its parts and
//     provenance (interrupted ones too; one with no parts is skipped).
//   - A tool call whose id is empty or was used before in the log (by any
//     earlier call, in this message or an earlier one, compacted or not)
//     gets the id DedupeID gives it (repair "duplicate-id"); the results
//     that follow pair with the calls in order, so the first result
//     carrying a repeated id answers the first call of the message with
//     that id still unanswered.
//   - tool.result becomes an llm.ToolResult part on the user message right
//     after the assistant message that made the call, in that message's
//     call order. A call with no result gets an error result with
//     TextNoResult ("missing-result"); a result for no unanswered call of
//     the preceding assistant message (a second result for one call, too)
//     is dropped ("orphan-result"). So every call is paired with exactly
//     one result and a request built from the messages is well formed.
//   - All user-role content between two assistant messages merges into one
//     user message, tool results first.
//   - compaction hides the events with seqs FromSeq..ToSeq and puts one
//     user-role text at their place: "[The earlier conversation was
//     compacted. Summary:]" and the summary. A later compaction whose
//     range holds an earlier one's place replaces its summary too.
//   - Every other event (prompt.blocked, turn and step boundaries, request
//     headers, chunks, tool.call, hook decisions, repair, …) contributes
//     nothing.
//
// Messages share parts with the events they came from (a renamed call is
// a copy); treat both as read-only. Tool call parts in user content and
// tool result parts in assistant content are dropped.
//
// The three pairing rules that change what the log holds note a repair of
// the kind in parentheses as the events are added (the rebuild after a
// compaction notes none for the events it applies again, so a call or
// result it cuts from its partner is not one); Repairs returns those the
// log does not record yet. DedupeCalls renames the calls of a fresh
// response by the same rule before they are logged, so a log the loop
// writes needs no renaming.
type Deriver struct {
	items chunked[item] // content events, kept for a rebuild after a compaction
	comps []compaction  // in log order
	maxTo int64         // the largest ToSeq of comps

	out []llm.Message // the view; out[grp] is the open user message if hasGrp

	// The open group: the user-role content after the last assistant message.
	calls   []callID          // the last assistant message's calls
	answers []*llm.ToolResult // the result of calls[i], nil if none yet
	user    []llm.Part
	hasGrp  bool
	grp     int
	dirty   bool

	ids  callIDs // every call id the log has used
	reps repairs
}

type itemKind uint8

const (
	itemUser itemKind = iota
	itemAssistant
	itemResult
)

// item is one event that shapes the view, already rendered.
type item struct {
	seq    int64
	kind   itemKind
	shown  bool       // result has been in the view
	parts  []llm.Part // user content or assistant parts
	calls  []callID   // an assistant message's calls
	prov   *llm.Provenance
	result *llm.ToolResult
	id     llm.CallID // the call id a result carries on the log
}

type compaction struct {
	from, to int64
	summary  string
}

// Add folds events, in log order, into the view.
func (d *Deriver) Add(events ...Event) {
	rebuild, from := false, 0
	for i := range events {
		e := &events[i]
		switch p := e.Data.(type) {
		case *Compaction:
			to := min(p.ToSeq, e.Seq-1) // a compaction cannot hide itself or what follows
			if p.FromSeq <= to {
				d.comps = append(d.comps, compaction{p.FromSeq, to, p.Summary})
				d.maxTo = max(d.maxTo, to)
				if !rebuild {
					rebuild, from = true, d.items.len()
				}
			}
			continue
		case *Repair:
			d.reps.record(p)
			continue
		}
		it, ok := d.toItem(e)
		if !ok {
			continue
		}
		kept := d.items.add(it)
		if !rebuild && !d.hidden(it.seq) {
			d.apply(kept)
		}
	}
	if rebuild {
		d.rebuild(from)
	}
}

// Messages returns the view. The slice is valid until the next Add; a
// caller that keeps it longer copies it. Appending to it never changes the
// Deriver.
func (d *Deriver) Messages() []llm.Message {
	d.materialize()
	if len(d.out) == 0 {
		return nil
	}
	return d.out[:len(d.out):len(d.out)]
}

// Len returns the number of messages in the view.
func (d *Deriver) Len() int {
	d.materialize()
	return len(d.out)
}

func (d *Deriver) hidden(seq int64) bool {
	if seq > d.maxTo {
		return false
	}
	for _, c := range d.comps {
		if c.from <= seq && seq <= c.to {
			return true
		}
	}
	return false
}

// rebuild derives the view again from the kept items; the repairs of
// items before from were noted when they were added.
func (d *Deriver) rebuild(from int) {
	d.out = make([]llm.Message, 0, len(d.out))
	d.calls, d.answers, d.user, d.hasGrp, d.dirty = nil, nil, nil, false, false
	// A summary stands unless a later compaction's range holds its place.
	var sums []compaction
	for i, c := range d.comps {
		covered := false
		for _, later := range d.comps[i+1:] {
			if later.from <= c.from && c.from <= later.to {
				covered = true
				break
			}
		}
		if !covered {
			sums = append(sums, c)
		}
	}
	slices.SortStableFunc(sums, func(a, b compaction) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return 0
	})
	for i, it := range d.items.all() {
		for len(sums) > 0 && sums[0].from <= it.seq {
			d.addUser(renderSummary(sums[0].summary))
			sums = sums[1:]
		}
		if !d.hidden(it.seq) {
			d.reps.quiet = i < from
			d.apply(it)
		}
	}
	d.reps.quiet = false
	for _, s := range sums {
		d.addUser(renderSummary(s.summary))
	}
}

func (d *Deriver) apply(it *item) {
	switch it.kind {
	case itemUser:
		d.addUser(it.parts)
	case itemAssistant:
		d.closeCalls()
		d.materialize()
		d.hasGrp = false
		d.out = push(d.out, llm.Message{Role: llm.RoleAssistant, Parts: it.parts, Provenance: it.prov})
		d.calls = it.calls
		clear(d.answers)
		d.answers = append(d.answers[:0], make([]*llm.ToolResult, len(it.calls))...)
		d.user = d.user[:0]
		d.dirty = len(it.calls) > 0 // their placeholder results show at once
	case itemResult:
		i := d.pair(it.id)
		if i < 0 {
			d.reps.note(RepairOrphanResult, it.id, DetailOrphanResult, "")
			return
		}
		if id := d.calls[i].view; it.result.CallID != id {
			if it.shown { // messages out there hold it: rename a copy
				r := *it.result
				it.result = &r
			}
			it.result.CallID = id
		}
		it.shown = true
		d.answers[i] = it.result
		d.dirty = true
	}
}

func (d *Deriver) addUser(parts []llm.Part) {
	if len(parts) == 0 {
		return
	}
	d.user = append(d.user, parts...)
	d.dirty = true
}

// materialize writes the open group into out as one user message.
func (d *Deriver) materialize() {
	if !d.dirty {
		return
	}
	d.dirty = false
	parts := make([]llm.Part, 0, len(d.calls)+len(d.user))
	for i, c := range d.calls {
		if r := d.answers[i]; r != nil {
			parts = append(parts, r)
		} else {
			parts = append(parts, &llm.ToolResult{CallID: c.view, IsError: true, Parts: []llm.Part{&llm.Text{Text: TextNoResult}}})
		}
	}
	parts = append(parts, d.user...)
	if len(parts) == 0 {
		return
	}
	if d.hasGrp {
		d.out[d.grp].Parts = parts
		return
	}
	d.hasGrp, d.grp = true, len(d.out)
	d.out = push(d.out, llm.Message{Role: llm.RoleUser, Parts: parts})
}

// toItem renders the events that shape the view, renaming repeated call
// ids.
func (d *Deriver) toItem(e *Event) (item, bool) {
	switch p := e.Data.(type) {
	case *UserMessage:
		return item{seq: e.Seq, kind: itemUser, parts: userParts(p.Parts)}, true
	case *ContextMessage:
		return item{seq: e.Seq, kind: itemUser, parts: renderContext(p.Source, userParts(p.Parts))}, true
	case *SteeringMessage:
		return item{seq: e.Seq, kind: itemUser, parts: renderSteering(p.Source, userParts(p.Parts))}, true
	case *AssistantMessage:
		parts := dropParts(p.Parts, func(p llm.Part) bool { _, ok := p.(*llm.ToolResult); return ok })
		if len(parts) == 0 {
			return item{}, false
		}
		it := item{seq: e.Seq, kind: itemAssistant, prov: p.Provenance}
		it.parts, it.calls = d.useCalls(parts)
		return it, true
	case *ToolResult:
		r := &llm.ToolResult{CallID: p.CallID, Parts: p.Parts, IsError: p.IsError}
		return item{seq: e.Seq, kind: itemResult, result: r, id: p.CallID}, true
	}
	return item{}, false
}

// useCalls takes the ids of the calls in parts, an assistant message's,
// and returns parts with repeated ids renamed and the calls' ids.
func (d *Deriver) useCalls(parts []llm.Part) (out []llm.Part, calls []callID) {
	out = parts[:len(parts):len(parts)]
	for i, q := range parts {
		c, ok := q.(*llm.ToolCall)
		if !ok || c == nil {
			continue
		}
		id := d.ids.use(c.ID)
		if id != c.ID {
			d.reps.note(RepairDuplicateID, c.ID, DetailDuplicateID, string(id))
			if &out[0] == &parts[0] {
				out = slices.Clone(parts)
			}
			cc := *c
			cc.ID = id
			out[i] = &cc
		}
		calls = append(calls, callID{view: id, logged: c.ID})
	}
	return out, calls
}

func userParts(ps []llm.Part) []llm.Part {
	return dropParts(ps, func(p llm.Part) bool {
		switch p.(type) {
		case *llm.ToolCall, *llm.ToolResult:
			return true
		}
		return p == nil
	})
}

// dropParts returns ps without the parts drop reports (and without nil
// parts), copying only when something is dropped.
func dropParts(ps []llm.Part, drop func(llm.Part) bool) []llm.Part {
	for i, p := range ps {
		if p == nil || drop(p) {
			out := slices.Clone(ps[:i])
			for _, q := range ps[i+1:] {
				if q != nil && !drop(q) {
					out = append(out, q)
				}
			}
			return out
		}
	}
	return ps
}

// framed puts head and tail around the text of ps as one Text part, with
// the other parts after it.
func framed(head, tail string, ps []llm.Part) []llm.Part {
	var b strings.Builder
	b.WriteString(head)
	var rest []llm.Part
	first := true
	for _, p := range ps {
		if t, ok := p.(*llm.Text); ok {
			if !first {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
			first = false
			continue
		}
		rest = append(rest, p)
	}
	b.WriteString(tail)
	return append([]llm.Part{&llm.Text{Text: b.String()}}, rest...)
}

func renderContext(source string, ps []llm.Part) []llm.Part {
	if len(ps) == 0 {
		return nil
	}
	head := "<context>\n"
	if source != "" {
		head = `<context source="` + html.EscapeString(source) + "\">\n"
	}
	return framed(head, "\n</context>", ps)
}

func renderSteering(source string, ps []llm.Part) []llm.Part {
	if len(ps) == 0 {
		return nil
	}
	head := "[The user sent this message while you were working.]\n"
	switch source {
	case "", SourceUser, SourceSteer, SourceFollowUp:
	default:
		head = "[Note from " + source + ", added while you were working.]\n"
	}
	return framed(head, "", ps)
}

func renderSummary(s string) []llm.Part {
	return []llm.Part{&llm.Text{Text: "[The earlier conversation was compacted. Summary:]\n" + s}}
}
