package agent

import (
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// history is the derived conversation plus what the loop tracks to
// record pairing repairs: session.Deriver keeps the view well formed (a
// call without a result gets a synthetic one, an orphan result is
// dropped), and history notes each such repair once so it is recorded.
// Each Add costs O(events added).
type history struct {
	d       session.Deriver
	open    map[llm.CallID]struct{} // calls without a result yet
	seen    map[llm.CallID]struct{} // every call id so far
	noted   map[string]bool         // repairs noted so far
	logged  map[string]bool         // repairs already on the log
	pending []session.Repair        // repairs to record before the next request
	dup     bool                    // a call id was used twice
	elided  map[llm.CallID]bool     // results left out of requests to fit the window
	est     int64                   // estimated tokens of the derived messages
	stale   bool                    // est must be computed again (a compaction, an elision)
}

func newHistory() *history {
	return &history{open: map[llm.CallID]struct{}{}, seen: map[llm.CallID]struct{}{}, noted: map[string]bool{}, logged: map[string]bool{}, elided: map[llm.CallID]bool{}}
}

func (h *history) Add(evs ...session.Event) {
	h.d.Add(evs...)
	for i := range evs {
		h.track(&evs[i])
		if !h.stale {
			h.est += estimateEvent(evs[i].Data)
		}
	}
}

// view is the derived history as requests send it: elided results
// without their bodies.
func (h *history) view() []llm.Message {
	m := h.Messages()
	if len(h.elided) > 0 {
		m = elide(m, h.elided)
	}
	return m
}

// tokens estimates the derived messages' size as requests send them. It
// costs O(events added) except after a compaction or an elision, when it
// measures the view once.
func (h *history) tokens() int64 {
	if h.stale {
		h.est, h.stale = EstimateTokens(h.view()), false
	}
	return h.est
}

func (h *history) track(ev *session.Event) {
	switch p := ev.Data.(type) {
	// As in session.Deriver, only the next assistant message closes the
	// open calls: user, steering and context content logged while tools
	// run merges after their results.
	case *session.AssistantMessage:
		if len(p.Parts) == 0 {
			return
		}
		h.closeOpen()
		for _, part := range p.Parts {
			if c, ok := part.(*llm.ToolCall); ok {
				if _, dup := h.seen[c.ID]; dup {
					h.dup = true
					h.note(session.Repair{Kind: "duplicate-id", CallID: c.ID, Detail: "a second call used this id; it is renamed in requests"})
				}
				h.seen[c.ID] = struct{}{}
				h.open[c.ID] = struct{}{}
			}
		}
	case *session.ToolResult:
		if _, ok := h.open[p.CallID]; !ok {
			h.note(session.Repair{Kind: "orphan-result", CallID: p.CallID, Detail: "a result with no open call is left out of requests"})
		}
		delete(h.open, p.CallID)
	case *session.Repair:
		h.logged[p.Kind+"\x00"+string(p.CallID)] = true
		if p.Kind == "elided-result" {
			h.elided[p.CallID] = true
			h.stale = true
		}
	case *session.Compaction:
		clear(h.open)
		h.stale = true
	}
}

// closeOpen notes the calls left without a result by new content.
func (h *history) closeOpen() {
	if len(h.open) == 0 {
		return
	}
	for id := range h.open {
		h.note(session.Repair{Kind: "missing-result", CallID: id, Detail: "answered with a synthetic error result in requests"})
	}
	clear(h.open)
}

func (h *history) note(r session.Repair) {
	key := r.Kind + "\x00" + string(r.CallID)
	if h.noted[key] {
		return
	}
	h.noted[key] = true
	h.pending = append(h.pending, r)
}

// repairs returns, and forgets, the repairs to record before a request;
// calls still open at request time are answered too.
func (h *history) repairs() []session.Repair {
	h.closeOpen()
	var out []session.Repair
	for _, r := range h.pending {
		if !h.logged[r.Kind+"\x00"+string(r.CallID)] {
			out = append(out, r)
		}
	}
	h.pending = nil
	return out
}

// Messages returns the derived history; appending to it never changes
// the history.
func (h *history) Messages() []llm.Message {
	m := h.d.Messages()
	if h.dup {
		m, _ = repairPairing(m)
	}
	return m[:len(m):len(m)]
}

// repairPairing returns msgs with tool pairing made well formed: results
// with no call dropped, calls with no result answered by a synthetic error
// result, and a duplicate call id renamed (with its result). It reports
// each change.
func repairPairing(msgs []llm.Message) ([]llm.Message, []session.Repair) {
	var repairs []session.Repair
	out := make([]llm.Message, 0, len(msgs)+1)
	seen := map[llm.CallID]int{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != llm.RoleAssistant {
			// Results here belong to no call just before: orphans.
			m, repairs = dropResults(m, nil, repairs)
			if len(m.Parts) > 0 {
				out = append(out, m)
			}
			continue
		}
		// Collect this message's calls, renaming duplicates.
		var calls []llm.CallID
		rename := map[llm.CallID]llm.CallID{}
		parts := make([]llm.Part, len(m.Parts))
		copy(parts, m.Parts)
		for j, p := range parts {
			c, ok := p.(*llm.ToolCall)
			if !ok {
				continue
			}
			id := c.ID
			if n, dup := seen[id]; dup || id == "" {
				nid := llm.CallID(fmt.Sprintf("%s_dup%d", id, n+1))
				seen[id] = n + 1
				repairs = append(repairs, session.Repair{Kind: "duplicate-id", CallID: id, Detail: "renamed to " + string(nid)})
				rename[id] = nid
				cc := *c
				cc.ID = nid
				parts[j] = &cc
				id = nid
			}
			seen[id] = 0
			calls = append(calls, id)
		}
		m.Parts = parts
		out = append(out, m)
		if len(calls) == 0 {
			continue
		}
		// The next message should hold their results.
		want := map[llm.CallID]bool{}
		for _, id := range calls {
			want[id] = true
		}
		var res llm.Message
		if i+1 < len(msgs) && msgs[i+1].Role == llm.RoleUser && hasResults(msgs[i+1]) {
			i++
			res = msgs[i]
			// Apply renames to the first result of a renamed id.
			rp := make([]llm.Part, 0, len(res.Parts))
			for _, p := range res.Parts {
				if r, ok := p.(*llm.ToolResult); ok {
					if nid, ok := rename[r.CallID]; ok {
						rr := *r
						rr.CallID = nid
						delete(rename, r.CallID)
						p = &rr
					}
				}
				rp = append(rp, p)
			}
			res.Parts = rp
			res, repairs = dropResults(res, want, repairs)
		} else {
			res = llm.Message{Role: llm.RoleUser}
		}
		var missing []llm.Part
		for _, id := range calls {
			if want[id] {
				missing = append(missing, &llm.ToolResult{CallID: id, IsError: true, Parts: []llm.Part{&llm.Text{Text: "No result was recorded for this tool call; it may not have run. Check before retrying it."}}})
				repairs = append(repairs, session.Repair{Kind: "missing-result", CallID: id, Detail: "answered with a synthetic error result"})
			}
		}
		// Results first, then whatever else the message carried.
		var resParts, other []llm.Part
		for _, p := range res.Parts {
			if _, ok := p.(*llm.ToolResult); ok {
				resParts = append(resParts, p)
			} else {
				other = append(other, p)
			}
		}
		res.Parts = append(append(resParts, missing...), other...)
		out = append(out, res)
	}
	return out, repairs
}

func hasResults(m llm.Message) bool {
	for _, p := range m.Parts {
		if _, ok := p.(*llm.ToolResult); ok {
			return true
		}
	}
	return false
}

// dropResults removes results whose call is not in want (and marks each
// kept one as answered by deleting it from want).
func dropResults(m llm.Message, want map[llm.CallID]bool, repairs []session.Repair) (llm.Message, []session.Repair) {
	if !hasResults(m) {
		return m, repairs
	}
	keep := make([]llm.Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		if r, ok := p.(*llm.ToolResult); ok {
			if !want[r.CallID] {
				repairs = append(repairs, session.Repair{Kind: "orphan-result", CallID: r.CallID, Detail: "dropped a result with no matching call"})
				continue
			}
			want[r.CallID] = false
		}
		keep = append(keep, p)
	}
	m.Parts = keep
	return m, repairs
}

// history returns the derived history and its estimated size.
func (w *logWriter) history() ([]llm.Message, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hist.Messages(), w.hist.tokens()
}

// tokens estimates the derived history's size as requests send it.
func (w *logWriter) tokens() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hist.tokens()
}

// elided counts the results elided to fit the window.
func (w *logWriter) elided() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.hist.elided)
}

// wholeResults lists the calls whose results msgs still hold whole, in
// order.
func (w *logWriter) wholeResults(msgs []llm.Message) []llm.CallID {
	w.mu.Lock()
	defer w.mu.Unlock()
	var whole []llm.CallID
	for _, m := range msgs {
		for _, p := range m.Parts {
			if tr, ok := p.(*llm.ToolResult); ok && !w.hist.elided[tr.CallID] && !isElided(tr) {
				whole = append(whole, tr.CallID)
			}
		}
	}
	return whole
}

// elide returns msgs without the bodies of the results elided so far.
func (w *logWriter) elide(msgs []llm.Message) []llm.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return elide(msgs, w.hist.elided)
}
