package session

import (
	"strconv"

	"github.com/reinhq/rein/llm"
)

// The texts of tool pairing: what a model reads in place of a result that
// is not on the log, and what a repair event says was changed. Every
// synthetic result and every pairing repair in the module uses these.
const (
	// TextNoResult is the text of the error result the derived view gives
	// a tool call the log holds no result for.
	TextNoResult = "tool call has no recorded result"
	// TextOutcomeUnknown is the text of the result RepairEvents writes for
	// a call a crash interrupted after it started.
	TextOutcomeUnknown = "The tool call was interrupted: its outcome is unknown; check before retrying."
	// TextNotStarted is the text of the result RepairEvents writes for a
	// call a crash left before it started.
	TextNotStarted = "The tool call never started: retry it if it is still needed."
)

// Kinds of the pairing repairs (Repair.Kind) a Deriver applies and
// reports. They are part of the log format.
const (
	// RepairMissingResult: a call with no result is answered with an error
	// result reading TextNoResult. CallID is the call's id in requests.
	RepairMissingResult = "missing-result"
	// RepairOrphanResult: a result that answers no open call of the
	// assistant message before it, or answers one a second time, is left
	// out. CallID is the id the result carries.
	RepairOrphanResult = "orphan-result"
	// RepairDuplicateID: a call that repeats an id used before in the
	// session, or has none, is renamed with DedupeID. CallID is the id as
	// the model gave it; Detail names the new one.
	RepairDuplicateID = "duplicate-id"
)

// Details of the pairing repairs (Repair.Detail).
const (
	DetailMissingResult = "answered with a synthetic error result in requests"
	DetailOrphanResult  = "a result with no open call is left out of requests"
	// DetailDuplicateID is followed by the new id.
	DetailDuplicateID = "the id was used before in this session; the call is renamed to "
)

// DedupeID is the one rule that renames a repeated or empty tool call id:
// id with "_dup" and n appended. The Deriver counts n up from 1 for each
// id, skipping names already taken.
func DedupeID(id llm.CallID, n int) llm.CallID {
	b := make([]byte, 0, len(id)+24)
	b = append(append(b, id...), "_dup"...)
	return llm.CallID(strconv.AppendInt(b, int64(n), 10))
}

// callIDs tracks the call ids a log has used, so repeats are renamed.
type callIDs struct {
	seen  map[llm.CallID]struct{}
	view  map[llm.CallID]int // the next n to try when the view renames
	fresh map[llm.CallID]int // the next n to try when DedupeCalls renames
}

func (c *callIDs) has(id llm.CallID) bool {
	_, ok := c.seen[id]
	return ok
}

// use returns the id a logged call has in the view: its own if it is new
// and not empty, else a renamed one. Either way the id is now taken.
func (c *callIDs) use(id llm.CallID) llm.CallID {
	if c.seen == nil {
		c.seen, c.view = map[llm.CallID]struct{}{}, map[llm.CallID]int{}
	}
	if id != "" && !c.has(id) {
		c.seen[id] = struct{}{}
		return id
	}
	nid := c.free(id, c.view, nil)
	c.seen[nid] = struct{}{}
	return nid
}

// free returns DedupeID(id, n) for the first n from next[id] on that
// neither the log nor taken uses, and moves next[id] past it, so renaming
// the same id again costs O(1) amortised.
func (c *callIDs) free(id llm.CallID, next map[llm.CallID]int, taken func(llm.CallID) bool) llm.CallID {
	for n := max(next[id], 1); ; n++ {
		nid := DedupeID(id, n)
		if !c.has(nid) && (taken == nil || !taken(nid)) {
			next[id] = n + 1
			return nid
		}
	}
}

// DedupeCalls returns parts, the parts of one fresh response, with every
// tool call whose id is empty, was used before in the session (in the
// events added so far) or repeats one earlier in parts renamed by
// DedupeID, and a repair for each rename, for the caller to record with
// the response. It copies parts, and a renamed call, only when it renames
// something; parts is not changed. Logging the returned parts instead of
// the response keeps the log free of repeated ids, so the view renames
// nothing. DedupeCalls itself does not change the view. It costs O(k²) in
// the k calls of parts, nothing in the history.
func (d *Deriver) DedupeCalls(parts []llm.Part) ([]llm.Part, []Repair) {
	out := parts
	var reps []Repair
	for i, p := range parts {
		c, ok := p.(*llm.ToolCall)
		if !ok || c == nil {
			continue
		}
		if c.ID != "" && !d.ids.has(c.ID) && !hasCall(out[:i], c.ID) {
			continue
		}
		if d.ids.fresh == nil {
			d.ids.fresh = map[llm.CallID]int{}
		}
		nid := d.ids.free(c.ID, d.ids.fresh, func(id llm.CallID) bool {
			return hasCall(out[:i], id) || hasCall(parts[i+1:], id)
		})
		if &out[0] == &parts[0] {
			out = append([]llm.Part(nil), parts...)
		}
		cc := *c
		cc.ID = nid
		out[i] = &cc
		reps = append(reps, Repair{Kind: RepairDuplicateID, CallID: c.ID, Detail: DetailDuplicateID + string(nid)})
	}
	return out, reps
}

func hasCall(parts []llm.Part, id llm.CallID) bool {
	for _, p := range parts {
		if c, ok := p.(*llm.ToolCall); ok && c != nil && c.ID == id {
			return true
		}
	}
	return false
}

// Repairs returns, and forgets, the pairing repairs the view has applied
// since the last call and the log does not record yet (a repair event of
// the same kind and call id means recorded); each kind and call id is
// reported once. It first counts the calls of the last assistant message
// that have no result yet as missing, so call it when the next request is
// built, once every result that is coming is on the log.
func (d *Deriver) Repairs() []Repair {
	d.closeCalls()
	var out []Repair
	for _, r := range d.reps.pending {
		if _, ok := d.reps.logged[repairKey{r.Kind, r.CallID}]; !ok {
			out = append(out, r)
		}
	}
	d.reps.pending = d.reps.pending[:0]
	return out
}

type repairKey struct {
	kind string
	id   llm.CallID
}

// repairs holds what Repairs reports.
type repairs struct {
	noted   map[repairKey]struct{}
	logged  map[repairKey]struct{}
	pending []Repair
	quiet   bool // a rebuild is applying events whose repairs were noted
}

// note adds a repair of kind to call id, unless one was noted; its detail
// is detail and then more.
func (r *repairs) note(kind string, id llm.CallID, detail, more string) {
	if r.quiet {
		return
	}
	k := repairKey{kind, id}
	if _, ok := r.noted[k]; ok {
		return
	}
	if r.noted == nil {
		r.noted = map[repairKey]struct{}{}
	}
	r.noted[k] = struct{}{}
	r.pending = append(r.pending, Repair{Kind: kind, CallID: id, Detail: detail + more})
}

func (r *repairs) record(p *Repair) {
	if r.logged == nil {
		r.logged = map[repairKey]struct{}{}
	}
	r.logged[repairKey{p.Kind, p.CallID}] = struct{}{}
}

// closeCalls notes the calls of the open group that have no result.
func (d *Deriver) closeCalls() {
	for i, c := range d.calls {
		if d.answers[i] == nil {
			d.reps.note(RepairMissingResult, c.view, DetailMissingResult, "")
		}
	}
}

// callID is a call's id in the view and as logged; they differ when the
// view renamed the call.
type callID struct{ view, logged llm.CallID }

// pair returns the index in the open group of the first call without a
// result that a result carrying id answers, or -1.
func (d *Deriver) pair(id llm.CallID) int {
	for i, c := range d.calls {
		if c.logged == id && d.answers[i] == nil {
			return i
		}
	}
	return -1
}
