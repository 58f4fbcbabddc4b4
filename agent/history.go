package agent

import (
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// history is the derived conversation the loop builds requests from. The
// session's Deriver does the projection and every tool-pairing repair;
// history adds only what is the loop's own: the results elided to fit the
// window and a running estimate of the view's size. Each Add costs
// O(events added).
type history struct {
	d      session.Deriver
	elided map[llm.CallID]bool // results left out of requests to fit the window
	est    int64               // estimated tokens of the derived messages
	stale  bool                // est must be computed again (a compaction, an elision)
}

func newHistory() *history { return &history{elided: map[llm.CallID]bool{}} }

// Add folds events, in log order, into the history.
func (h *history) Add(evs ...session.Event) {
	h.d.Add(evs...)
	for i := range evs {
		switch p := evs[i].Data.(type) {
		case *session.Repair:
			if p.Kind == "elided-result" {
				h.elided[p.CallID] = true
				h.stale = true
			}
		case *session.Compaction:
			h.stale = true
		}
		if !h.stale {
			h.est += estimateEvent(evs[i].Data)
		}
	}
}

// Messages returns the derived history; appending to it never changes
// the history.
func (h *history) Messages() []llm.Message { return h.d.Messages() }

// repairs returns, and forgets, the pairing repairs to record before a
// request (see session.Deriver.Repairs).
func (h *history) repairs() []session.Repair { return h.d.Repairs() }

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

// pendingTokens estimates what the events not yet written add to the
// derived history once they are.
func (w *logWriter) pendingTokens() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for i := range w.pending {
		n += estimateEvent(w.pending[i].Data)
	}
	return n
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

// dedupeCalls renames the calls of a fresh response whose id was used
// before in the session (or is empty), by the session's one rename rule,
// so every call pairs with exactly one result; it returns the renames to
// record.
func (w *logWriter) dedupeCalls(parts []llm.Part) ([]llm.Part, []session.Repair) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hist.d.DedupeCalls(parts)
}
