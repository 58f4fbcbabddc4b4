package agent

import (
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// overflow follows what one model call did to fit a request the provider
// found too long for its window.
type overflow struct {
	shrinks   int
	compacted bool
	smaller   *llm.Request // the request to send instead, once made smaller
}

func (o *overflow) req(orig *llm.Request) *llm.Request {
	if o.smaller != nil {
		return o.smaller
	}
	return orig
}

// maxShrinks bounds the passes that elide tool results from a request the
// provider found too long.
const maxShrinks = 4

// textElided replaces the body of a tool result elided to fit the window.
const textElided = "[This tool result was elided to fit the context window; run the call again if you need it.]"

// fitWindow makes a request the provider found too long smaller:
// compacted first when compaction is on, else (or then) with its oldest
// tool results elided. It reports whether there is a smaller request.
func (r *runState) fitWindow(req *llm.Request, ov *overflow) bool {
	if !ov.compacted && r.a.opts.Compaction != nil && !r.compact.off {
		ov.compacted = true
		if r.autoCompact(true) {
			if nreq, err := r.request(); err == nil {
				ov.smaller = nreq
				return true
			}
		}
		if r.fatal != nil {
			return false
		}
	}
	if ov.shrinks < maxShrinks {
		if nreq, ok := r.shrink(req); ok {
			ov.shrinks++
			ov.smaller = nreq
			return true
		}
	}
	return false
}

// overflowError ends a turn whose request stays too long for the model
// after compaction and elision.
type overflowError struct {
	elided    int
	compacted bool
	err       error
}

func (e *overflowError) Error() string {
	how := fmt.Sprintf("after eliding %d tool results", e.elided)
	if e.compacted {
		how = "after compacting and " + how[6:]
	}
	return fmt.Sprintf("agent: the request is still too long for the model's context window %s; compact the session with a smaller KeepSteps (Agent.Compact), start a new session, or use a model with a larger window: %v", how, e.err)
}

func (e *overflowError) Unwrap() error { return e.err }

// shrink elides the older half of the tool results still whole in req,
// oldest first, records each, and returns the smaller request. It reports
// false when nothing is left to elide.
func (r *runState) shrink(req *llm.Request) (*llm.Request, bool) {
	whole := r.w.wholeResults(req.Messages)
	if len(whole) == 0 {
		return nil, false
	}
	n := (len(whole) + 1) / 2
	for _, id := range whole[:n] {
		r.emit(&session.Repair{Kind: "elided-result", CallID: id, Detail: "tool result left out of requests: the context window was too small"})
	}
	if !r.flush() {
		return nil, false
	}
	nreq := *req
	nreq.Messages = r.w.elide(req.Messages)
	return &nreq, true
}

func isElided(tr *llm.ToolResult) bool {
	return len(tr.Parts) == 1 && partText(tr.Parts[0]) == textElided
}

func partText(p llm.Part) string {
	if t, ok := p.(*llm.Text); ok {
		return t.Text
	}
	return ""
}

// elide returns msgs with the bodies of the results in set replaced. It
// copies what it changes and shares the rest.
func elide(msgs []llm.Message, set map[llm.CallID]bool) []llm.Message {
	out := make([]llm.Message, len(msgs))
	copy(out, msgs)
	for i, m := range out {
		changed := false
		for _, p := range m.Parts {
			if tr, ok := p.(*llm.ToolResult); ok && set[tr.CallID] && !isElided(tr) {
				changed = true
				break
			}
		}
		if !changed {
			continue
		}
		parts := make([]llm.Part, len(m.Parts))
		for j, p := range m.Parts {
			if tr, ok := p.(*llm.ToolResult); ok && set[tr.CallID] {
				p = &llm.ToolResult{CallID: tr.CallID, IsError: tr.IsError, Parts: []llm.Part{&llm.Text{Text: textElided}}}
			}
			parts[j] = p
		}
		out[i].Parts = parts
	}
	return out
}
