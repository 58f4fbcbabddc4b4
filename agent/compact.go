package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Compaction errors.
var (
	ErrCompactBusy      = errors.New("agent: cannot compact while a run is in flight; wait for it (WaitIdle) or cancel it, then compact")
	ErrNothingToCompact = errors.New("agent: nothing to compact: the history is no longer than the steps to keep")
)

// TriggerCompact is the trigger of the turn that records a manual
// compaction (Agent.Compact).
const TriggerCompact = "compact"

// SourceCompaction is the source of the context a compaction re-attaches
// after its summary: recently read files and the todo list.
const SourceCompaction = "compaction"

// DefaultCompactPrompt is the summarizer's system prompt.
const DefaultCompactPrompt = `You summarise a coding agent's conversation so the agent can continue the work with the summary in place of the conversation.
Write a dense, factual summary with these headings:
1. Task: what the user asked for, in their words where it matters, and every later change of direction.
2. State: what has been done, what works, what is broken; files created or changed and why.
3. Findings: facts learned (paths, names, commands, errors and their causes) that the work depends on.
4. Next: the step in progress and the steps left.
Keep exact identifiers, paths and error messages. Leave out pleasantries and anything the work no longer needs. Write only the summary.`

// CompactionOptions tunes compaction. The zero value is ready to use.
type CompactionOptions struct {
	// Threshold is the share of the usable window (context window less
	// output reserve) at which a run compacts before its next request;
	// zero means 0.8. Automatic compaction needs a known window.
	Threshold float64
	// KeepSteps is how many of the latest steps automatic compaction
	// keeps verbatim; zero means 2, negative keeps none. Fewer are kept
	// when they alone would fill half the threshold.
	KeepSteps int
	// Prompt replaces DefaultCompactPrompt.
	Prompt string
	// SummaryTokens caps the summary's output tokens; zero means 4096.
	SummaryTokens int
	// MaxFailures is how many automatic compactions in a row may fail
	// before the run stops trying (recorded as a repair of kind
	// "compaction-disabled"); zero means 3.
	MaxFailures int
	// ReadTools names the tools whose results are files read, re-attached
	// after the summary (the latest read of each path, newest first);
	// nil means {"read"}.
	ReadTools []string
	// ReattachFiles and ReattachBytes bound what is re-attached; zero
	// means 5 files and 40 000 bytes.
	ReattachFiles int
	ReattachBytes int
}

// CompactRequest is one call of Agent.Compact.
type CompactRequest struct {
	// KeepSteps is how many of the latest steps stay verbatim; zero
	// compacts everything.
	KeepSteps int
	// Instructions are added to the summarizer's prompt, e.g. "focus on
	// the failing test".
	Instructions string
}

// CompactResult describes a compaction written to the log.
type CompactResult struct {
	// FromSeq..ToSeq is the range the summary replaces.
	FromSeq, ToSeq int64
	// TokensBefore and TokensAfter are the request's estimated size.
	TokensBefore, TokensAfter int64
	Summary                   string
	// Reattached counts the re-attached files and todo lists.
	Reattached int
	// Chunks is how many summarizer calls the input needed.
	Chunks int
	// Usage is what the summarizer calls used.
	Usage llm.Usage
}

// CompactPhase is the phase of a compaction, on its transient
// session.CompactionProgress events.
type CompactPhase string

// Compaction phases.
const (
	CompactStart    CompactPhase = "start"
	CompactProgress CompactPhase = "progress" // one summarizer chunk done
	CompactEnd      CompactPhase = "end"      // the compaction is on the log
	CompactFailed   CompactPhase = "failed"   // nothing was written
)

// CompactListener is implemented by tools that keep per-session state
// tied to what the model has seen (such as which files it has read); the
// agent calls Compacted after each compaction is written.
type CompactListener interface {
	Compacted(ctx context.Context, sess session.ID)
}

func (a *Agent) compactOpts() CompactionOptions {
	var o CompactionOptions
	if a.opts.Compaction != nil {
		o = *a.opts.Compaction
	}
	if o.Threshold <= 0 || o.Threshold > 1 {
		o.Threshold = 0.8
	}
	if o.KeepSteps == 0 {
		o.KeepSteps = 2
	}
	if o.Prompt == "" {
		o.Prompt = DefaultCompactPrompt
	}
	if o.SummaryTokens <= 0 {
		o.SummaryTokens = 4096
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 3
	}
	if o.ReadTools == nil {
		o.ReadTools = []string{"read"}
	}
	if o.ReattachFiles <= 0 {
		o.ReattachFiles = 5
	}
	if o.ReattachBytes <= 0 {
		o.ReattachBytes = 40000
	}
	return o
}

// compactAt is the request size at which automatic compaction starts;
// zero when it is off or the window is unknown.
func (a *Agent) compactAt() int64 {
	if a.opts.Compaction == nil || a.usable() == 0 {
		return 0
	}
	return int64(float64(a.usable()) * a.compactOpts().Threshold)
}

// requestTokens estimates the next request's size.
func (a *Agent) requestTokens() int64 { return a.fixedTokens() + a.w.tokens() }

// Compact replaces the older part of the conversation with a summary the
// model writes: a session.Compaction event hides the events it covers
// (the log keeps them), the latest req.KeepSteps steps stay verbatim, and
// recently read files and the todo list are re-attached after the
// summary as context. It runs while the agent is idle, recorded in a turn
// of its own (trigger TriggerCompact); during a run it returns
// ErrCompactBusy. A failed summary leaves the log untouched. Its progress
// is published to observers of session.TypeCompactionProgress.
func (a *Agent) Compact(ctx context.Context, req *CompactRequest) (*CompactResult, error) {
	if req == nil {
		req = &CompactRequest{}
	}
	a.mu.Lock()
	switch {
	case a.closed:
		a.mu.Unlock()
		return nil, ErrClosed
	case a.ctl != nil || a.compacting:
		a.mu.Unlock()
		return nil, ErrCompactBusy
	}
	a.compacting = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.compacting = false
		a.mu.Unlock()
	}()
	n := &notifier{a: a}
	plan, err := a.compact(ctx, a.targets[0], max(req.KeepSteps, 0), req.Instructions, n, 0)
	if err != nil {
		return nil, err
	}
	if err := a.w.record(context.WithoutCancel(ctx), TriggerCompact, plan.payloads...); err != nil {
		n.tell(CompactFailed, &session.CompactionProgress{FromSeq: plan.res.FromSeq, ToSeq: plan.res.ToSeq, TokensBefore: plan.res.TokensBefore, Error: err.Error()})
		return nil, err
	}
	plan.res.TokensAfter = a.requestTokens()
	a.compacted(ctx, n, plan)
	return plan.res, nil
}

// compacted tells the tools and the host that a compaction was written.
func (a *Agent) compacted(ctx context.Context, n *notifier, plan *compactPlan) {
	sid := a.Session()
	for _, e := range a.tb.Load().byName {
		if l, ok := tool.As[CompactListener](e.t); ok {
			l.Compacted(ctx, sid)
		}
	}
	r := plan.res
	a.log.Info("compacted", "session", sid, "auto", n.auto, "from", r.FromSeq, "to", r.ToSeq, "tokens_before", r.TokensBefore, "tokens_after", r.TokensAfter, "chunks", r.Chunks)
	n.tell(CompactEnd, &session.CompactionProgress{Chunk: r.Chunks, Chunks: r.Chunks, FromSeq: r.FromSeq, ToSeq: r.ToSeq, TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter})
}

// notifier publishes a compaction's progress as transient events: through
// the run when the loop compacts, straight to the bus otherwise.
type notifier struct {
	a    *Agent
	r    *runState // nil for Agent.Compact
	auto bool
}

func (n *notifier) tell(phase CompactPhase, p *session.CompactionProgress) {
	p.Phase, p.Auto = string(phase), n.auto
	if n.r != nil {
		n.r.transient(p)
		return
	}
	if n.a.bus.Has() {
		n.a.w.publish("", "", p)
	}
}

// compactPlan is a compaction ready to be written.
type compactPlan struct {
	payloads []session.Payload
	res      *CompactResult
}

// compact reads the log, picks the range, has the model summarise it and
// returns what to write. It writes nothing. tailCap, when positive,
// bounds the estimated tokens of the steps kept verbatim.
func (a *Agent) compact(ctx context.Context, t Target, keep int, instructions string, n *notifier, tailCap int64) (*compactPlan, error) {
	o := a.compactOpts()
	sid := a.Session()
	evs, err := session.Collect(a.store.Events(ctx, sid, 0))
	if err != nil {
		return nil, fmt.Errorf("agent: compact: read session %s: %w", sid, err)
	}
	cutIdx, err := cutPoint(evs, keep, tailCap)
	if err != nil {
		return nil, err
	}
	cut := evs[cutIdx].Seq
	before := a.requestTokens()
	span := session.CompactionProgress{FromSeq: 1, ToSeq: cut, TokensBefore: before}
	n.tell(CompactStart, &session.CompactionProgress{FromSeq: 1, ToSeq: cut, TokensBefore: before})
	// The summarizer's input: the view of the range, earlier summaries
	// included.
	var d session.Deriver
	d.Add(evs[:cutIdx+1]...)
	for i := cutIdx + 1; i < len(evs); i++ {
		if _, ok := evs[i].Data.(*session.Compaction); ok {
			d.Add(evs[i])
		}
	}
	summary, chunks, usage, err := a.summarize(ctx, t, o, d.Messages(), instructions, func(done, total int) {
		p := span
		p.Chunk, p.Chunks = done, total
		n.tell(CompactProgress, &p)
	})
	if err != nil {
		p := span
		p.Error = err.Error()
		n.tell(CompactFailed, &p)
		return nil, err
	}
	res := &CompactResult{FromSeq: 1, ToSeq: cut, TokensBefore: before, Summary: summary, Chunks: chunks, Usage: usage}
	comp := &session.Compaction{Summary: summary, FromSeq: 1, ToSeq: cut, TokensBefore: before}
	payloads := []session.Payload{comp}
	if parts, n := a.reattach(o, evs, cutIdx); len(parts) > 0 {
		payloads = append(payloads, &session.ContextMessage{Parts: parts, Source: SourceCompaction})
		res.Reattached = n
	}
	// The request's size once the compaction is in.
	after := a.fixedTokens() + estimateText(summary) + 16
	for i := cutIdx + 1; i < len(evs); i++ {
		after += estimateEvent(evs[i].Data)
	}
	for _, p := range payloads[1:] {
		after += estimateEvent(p)
	}
	comp.TokensAfter, res.TokensAfter = after, after
	return &compactPlan{payloads: payloads, res: res}, nil
}

// cutPoint returns the index of the last event a compaction covers: all
// but the latest keep steps (fewer when those alone pass tailCap). Cut
// points sit just before an assistant message, so a call and its results
// are always on the same side. ErrNothingToCompact when nothing new
// would be summarised.
func cutPoint(evs []session.Event, keep int, tailCap int64) (int, error) {
	if len(evs) == 0 {
		return 0, ErrNothingToCompact
	}
	// The latest compaction's range end: only what follows it is new.
	var lastTo int64
	for i := range evs {
		if c, ok := evs[i].Data.(*session.Compaction); ok {
			lastTo = max(lastTo, min(c.ToSeq, evs[i].Seq-1))
		}
	}
	var starts []int // indexes of visible assistant messages
	for i := range evs {
		if m, ok := evs[i].Data.(*session.AssistantMessage); ok && len(m.Parts) > 0 && evs[i].Seq > lastTo {
			starts = append(starts, i)
		}
	}
	cutIdx := len(evs) - 1
	if keep > 0 {
		if keep >= len(starts) {
			return 0, ErrNothingToCompact
		}
		k := len(starts) - keep
		if tailCap > 0 {
			// Keep fewer steps while the kept ones alone are too big.
			var tail int64
			j := len(evs) - 1
			for ; k < len(starts); k++ {
				for ; j >= starts[k]; j-- {
					tail += estimateEvent(evs[j].Data)
				}
				if tail <= tailCap {
					break
				}
			}
		}
		if k < len(starts) {
			cutIdx = starts[k] - 1
		}
	}
	for i := cutIdx; i >= 0 && evs[i].Seq > lastTo; i-- {
		if estimateEvent(evs[i].Data) > 0 {
			return cutIdx, nil
		}
	}
	return 0, ErrNothingToCompact
}

// compactState is the run's automatic compaction: its circuit breaker
// and when to try again.
type compactState struct {
	fails int  // automatic compactions failed in a row
	off   bool // the circuit breaker tripped for this run
	// retryAt is the size the request must reach before the next
	// automatic attempt, after one that could not get under the threshold.
	retryAt int64
}

// compactIfDue compacts before a step whose request would pass the
// threshold.
func (r *runState) compactIfDue() {
	a := r.a
	at := a.compactAt()
	if at <= 0 || r.compact.off {
		return
	}
	due := max(at, r.compact.retryAt)
	if a.requestTokens()+r.w.pendingTokens() < due {
		return
	}
	// The check and the summary see the whole of the last step.
	if r.flush() && a.requestTokens() >= due {
		r.autoCompact(false)
	}
}

// autoCompact compacts during a run, between steps (or after a request
// the provider found too long). It reports whether the history changed.
// Failures count toward the circuit breaker; the run goes on either way.
func (r *runState) autoCompact(overflow bool) bool {
	a := r.a
	if r.compact.off || a.opts.Compaction == nil {
		return false
	}
	o := a.compactOpts()
	tailCap := a.compactAt() / 2
	if overflow {
		tailCap = a.usable() / 4
	}
	// An attempt that cannot get under the threshold is not repeated
	// until the request has grown by a tenth of the window: reading the
	// log every step would cost what the history holds.
	retryAt := a.requestTokens() + a.usable()/10
	n := &notifier{a: a, r: r, auto: true}
	plan, err := a.compact(r.ctx, a.targets[r.target], max(o.KeepSteps, 0), "", n, tailCap)
	switch {
	case errors.Is(err, ErrNothingToCompact):
		r.compact.retryAt = retryAt
		return false
	case err == nil:
		return r.commitCompaction(n, plan)
	case r.isCancelled():
		return false
	}
	r.compact.fails++
	a.log.Warn("automatic compaction failed; the history is unchanged", "session", r.sid, "turn", r.turn, "failures", r.compact.fails, "err", err)
	if r.compact.fails >= o.MaxFailures {
		r.compact.off = true
		r.emit(&session.Repair{Kind: "compaction-disabled", Detail: fmt.Sprintf("automatic compaction failed %d times in a row; it is off for the rest of this run (last error: %v)", r.compact.fails, err)})
		r.flush()
	}
	return false
}

// commitCompaction writes an automatic compaction's events.
func (r *runState) commitCompaction(n *notifier, plan *compactPlan) bool {
	a := r.a
	r.meter.add(a.opts.Cost, r.provs[r.target], plan.res.Usage)
	for _, p := range plan.payloads {
		r.emit(p)
	}
	if !r.flush() {
		return false
	}
	plan.res.TokensAfter = a.requestTokens()
	r.compact.fails, r.compact.retryAt = 0, 0
	if plan.res.TokensAfter >= a.compactAt() {
		r.compact.retryAt = plan.res.TokensAfter + a.usable()/10
	}
	a.compacted(r.ctx, n, plan)
	return true
}
