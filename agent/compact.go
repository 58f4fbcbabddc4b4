package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
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

// CompactPhase is the phase a CompactNotice reports.
type CompactPhase string

// Compaction phases.
const (
	CompactStart    CompactPhase = "start"
	CompactProgress CompactPhase = "progress" // one summarizer chunk done
	CompactEnd      CompactPhase = "end"      // the compaction is on the log
	CompactFailed   CompactPhase = "failed"   // nothing was written
)

// CompactNotice tells Options.OnCompact about a compaction.
type CompactNotice struct {
	Phase   CompactPhase
	Session session.ID
	// Auto is set for a compaction the loop started (threshold or
	// overflow).
	Auto bool
	// Chunk of Chunks summarizer calls are done (progress and end).
	Chunk, Chunks int
	// FromSeq..ToSeq is the range being compacted.
	FromSeq, ToSeq int64
	// TokensBefore, and at the end TokensAfter, are the request's
	// estimated size.
	TokensBefore, TokensAfter int64
	// Err is why a compaction failed.
	Err error
}

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
func (a *Agent) requestTokens() int64 {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	return a.fixed + a.hist.tokens()
}

// Compact replaces the older part of the conversation with a summary the
// model writes: a session.Compaction event hides the events it covers
// (the log keeps them), the latest req.KeepSteps steps stay verbatim, and
// recently read files and the todo list are re-attached after the
// summary as context. It runs while the agent is idle, recorded in a turn
// of its own (trigger TriggerCompact); during a run it returns
// ErrCompactBusy. A failed summary leaves the log untouched.
func (a *Agent) Compact(ctx context.Context, req *CompactRequest) (*CompactResult, error) {
	if req == nil {
		req = &CompactRequest{}
	}
	a.mu.Lock()
	switch {
	case a.closed:
		a.mu.Unlock()
		return nil, ErrClosed
	case a.cur != nil || a.compacting:
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
	plan, err := a.compact(ctx, a.targets[0], max(req.KeepSteps, 0), req.Instructions, false, 0)
	if err != nil {
		return nil, err
	}
	a.logMu.Lock()
	a.turns++
	turn := session.TurnID("turn-" + itoa(a.turns))
	a.emitLocked(turn, "", &session.TurnStart{Trigger: TriggerCompact})
	for _, p := range plan.payloads {
		a.emitLocked(turn, "", p)
	}
	a.emitLocked(turn, "", &session.TurnEnd{Reason: session.EndCompleted})
	_, err = a.flushLocked(context.WithoutCancel(ctx))
	if err == nil {
		plan.res.TokensAfter = a.fixed + a.hist.tokens()
	}
	a.logMu.Unlock()
	if err != nil {
		a.notify(CompactNotice{Phase: CompactFailed, FromSeq: plan.res.FromSeq, ToSeq: plan.res.ToSeq, TokensBefore: plan.res.TokensBefore, Err: err})
		return nil, err
	}
	a.compacted(ctx, plan, false)
	return plan.res, nil
}

// compacted tells the host and the tools that a compaction was written.
func (a *Agent) compacted(ctx context.Context, plan *compactPlan, auto bool) {
	sid := a.Session()
	for _, e := range a.tools {
		if l, ok := e.t.(CompactListener); ok {
			l.Compacted(ctx, sid)
		}
	}
	r := plan.res
	a.log.Info("compacted", "session", sid, "auto", auto, "from", r.FromSeq, "to", r.ToSeq, "tokens_before", r.TokensBefore, "tokens_after", r.TokensAfter, "chunks", r.Chunks)
	a.notify(CompactNotice{Phase: CompactEnd, Auto: auto, Chunk: r.Chunks, Chunks: r.Chunks, FromSeq: r.FromSeq, ToSeq: r.ToSeq, TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter})
}

func (a *Agent) notify(n CompactNotice) {
	if a.opts.OnCompact == nil {
		return
	}
	if n.Session == "" {
		n.Session = a.Session()
	}
	a.opts.OnCompact(n)
}

// compactPlan is a compaction ready to be written.
type compactPlan struct {
	payloads []session.Payload
	res      *CompactResult
}

// compact reads the log, picks the range, has the model summarise it and
// returns what to write. It writes nothing. tailCap, when positive,
// bounds the estimated tokens of the steps kept verbatim.
func (a *Agent) compact(ctx context.Context, t Target, keep int, instructions string, auto bool, tailCap int64) (*compactPlan, error) {
	o := a.compactOpts()
	sid := a.Session()
	var evs []session.Event
	for ev, err := range a.store.Events(ctx, sid, 0) {
		if err != nil {
			return nil, fmt.Errorf("agent: compact: read session %s: %w", sid, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return nil, ErrNothingToCompact
	}
	// The latest compaction's range end: only what follows it is new.
	var lastTo int64
	for i := range evs {
		if c, ok := evs[i].Data.(*session.Compaction); ok {
			lastTo = max(lastTo, min(c.ToSeq, evs[i].Seq-1))
		}
	}
	// Cut points sit just before an assistant message, so a call and its
	// results are always on the same side.
	var starts []int // indexes of visible assistant messages
	for i := range evs {
		if m, ok := evs[i].Data.(*session.AssistantMessage); ok && len(m.Parts) > 0 && evs[i].Seq > lastTo {
			starts = append(starts, i)
		}
	}
	cutIdx := len(evs) - 1 // the index of the last event compacted
	if keep > 0 {
		if keep >= len(starts) {
			return nil, ErrNothingToCompact
		}
		k := len(starts) - keep
		if tailCap > 0 {
			// Keep fewer steps while the kept ones alone are too big.
			var tail int64
			j := len(evs) - 1
			for k < len(starts) {
				for ; j >= starts[k]; j-- {
					tail += estimateEvent(evs[j].Data)
				}
				if tail <= tailCap {
					break
				}
				k++
			}
			if k == len(starts) {
				cutIdx = len(evs) - 1
			} else {
				cutIdx = starts[k] - 1
			}
		} else {
			cutIdx = starts[k] - 1
		}
	}
	cut := evs[cutIdx].Seq
	content := false
	for i := cutIdx; i >= 0 && evs[i].Seq > lastTo; i-- {
		if estimateEvent(evs[i].Data) > 0 {
			content = true
			break
		}
	}
	if !content {
		return nil, ErrNothingToCompact
	}
	before := a.requestTokens()
	a.notify(CompactNotice{Phase: CompactStart, Session: sid, Auto: auto, FromSeq: 1, ToSeq: cut, TokensBefore: before})
	fail := func(err error) (*compactPlan, error) {
		a.notify(CompactNotice{Phase: CompactFailed, Session: sid, Auto: auto, FromSeq: 1, ToSeq: cut, TokensBefore: before, Err: err})
		return nil, err
	}

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
		a.notify(CompactNotice{Phase: CompactProgress, Session: sid, Auto: auto, Chunk: done, Chunks: total, FromSeq: 1, ToSeq: cut, TokensBefore: before})
	})
	if err != nil {
		return fail(err)
	}
	res := &CompactResult{FromSeq: 1, ToSeq: cut, TokensBefore: before, Summary: summary, Chunks: chunks, Usage: usage}
	comp := &session.Compaction{Summary: summary, FromSeq: 1, ToSeq: cut, TokensBefore: before}
	payloads := []session.Payload{comp}
	if parts, n := a.reattach(o, evs, cutIdx); len(parts) > 0 {
		payloads = append(payloads, &session.ContextMessage{Parts: parts, Source: SourceCompaction})
		res.Reattached = n
	}
	// The request's size once the compaction is in.
	after := a.fixed + estimateText(summary) + 16
	for i := cutIdx + 1; i < len(evs); i++ {
		after += estimateEvent(evs[i].Data)
	}
	for _, p := range payloads[1:] {
		after += estimateEvent(p)
	}
	comp.TokensAfter, res.TokensAfter = after, after
	return &compactPlan{payloads: payloads, res: res}, nil
}

// summarize has the model summarise msgs, in chunks that fit its window:
// each chunk's call carries the summary so far.
func (a *Agent) summarize(ctx context.Context, t Target, o CompactionOptions, msgs []llm.Message, instructions string, progress func(done, total int)) (string, int, llm.Usage, error) {
	var usage llm.Usage
	// A chunk gets the usable window less the prompt, the summary carried
	// over and the summary written, with a margin for the estimate.
	budget := int64(100000)
	if u := a.usable(); u > 0 {
		o.SummaryTokens = int(min(int64(o.SummaryTokens), max(u/8, 256)))
		budget = min(budget, (u-estimateText(o.Prompt)-2*int64(o.SummaryTokens))*3/4)
	}
	budget = max(budget, 1024)
	for attempt := 0; ; attempt++ {
		chunks := renderChunks(msgs, budget*4)
		summary := ""
		var err error
		for i, c := range chunks {
			var u llm.Usage
			summary, u, err = a.summaryCall(ctx, t, o, c, summary, instructions, i == len(chunks)-1)
			usage.Add(u)
			if err != nil {
				break
			}
			if progress != nil {
				progress(i+1, len(chunks))
			}
		}
		if err == nil {
			return summary, len(chunks), usage, nil
		}
		if llm.KindOf(err) == llm.ErrContextTooLong && attempt < 3 && budget > 1024 {
			budget /= 2 // the estimate was short: smaller chunks
			continue
		}
		return "", 0, usage, fmt.Errorf("agent: compact: the summary request failed: %w", err)
	}
}

func (a *Agent) summaryCall(ctx context.Context, t Target, o CompactionOptions, transcript, sofar, instructions string, final bool) (string, llm.Usage, error) {
	var b strings.Builder
	if sofar != "" {
		b.WriteString("Summary of the conversation before this part:\n<summary>\n")
		b.WriteString(sofar)
		b.WriteString("\n</summary>\n\n")
	}
	b.WriteString("The conversation to summarise:\n<conversation>\n")
	b.WriteString(transcript)
	b.WriteString("\n</conversation>\n\n")
	if sofar != "" {
		b.WriteString("Write one summary covering both the summary above and this part.")
	} else {
		b.WriteString("Summarise the conversation.")
	}
	if instructions != "" {
		b.WriteString("\n\nAlso: ")
		b.WriteString(instructions)
	}
	req := &llm.Request{
		Model:     t.Model,
		System:    []llm.Text{{Text: o.Prompt}},
		Messages:  []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: b.String()}}}},
		MaxTokens: o.SummaryTokens,
	}
	res, err := llm.Collect(t.Client.Stream(ctx, req))
	var u llm.Usage
	if res != nil {
		u = res.Usage
	}
	if err != nil {
		return "", u, err
	}
	s := strings.TrimSpace(res.Message.Text())
	if s == "" {
		return "", u, errors.New("agent: compact: the model returned an empty summary")
	}
	return s, u, nil
}

// Caps on what one message contributes to a summarizer transcript.
const (
	transcriptResultBytes = 4000
	transcriptArgsBytes   = 1000
)

// renderChunks renders msgs as a plain transcript cut into chunks of at
// most limit bytes, at message boundaries where it can.
func renderChunks(msgs []llm.Message, limit int64) []string {
	var chunks []string
	var cur strings.Builder
	for _, m := range msgs {
		s := renderMessage(m)
		if int64(len(s)) > limit {
			s = s[:limit-64] + "\n[… cut to fit]\n"
		}
		if cur.Len() > 0 && int64(cur.Len()+len(s)) > limit {
			chunks = append(chunks, cur.String())
			cur.Reset()
		}
		cur.WriteString(s)
	}
	if cur.Len() > 0 || len(chunks) == 0 {
		chunks = append(chunks, cur.String())
	}
	return chunks
}

func renderMessage(m llm.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case *llm.Text:
			fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, p.Text)
		case *llm.ToolCall:
			fmt.Fprintf(&b, "[tool call %s %s]\n%s\n", p.ID, p.Name, clip(string(p.Args), transcriptArgsBytes))
		case *llm.ToolResult:
			status := "result"
			if p.IsError {
				status = "error result"
			}
			fmt.Fprintf(&b, "[tool %s %s]\n%s\n", status, p.CallID, clip(partsText(p.Parts), transcriptResultBytes))
		case *llm.Image:
			fmt.Fprintf(&b, "[%s: an image]\n", m.Role)
		case *llm.Document:
			fmt.Fprintf(&b, "[%s: a document %s]\n", m.Role, p.Title)
		}
	}
	return b.String()
}

func partsText(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n[… %d more bytes]", len(s)-n)
}

// reattach returns the context re-attached after a summary: the latest
// successful read of each recently read file whose read is compacted
// away, newest first, within the options' bounds, and the todo list when
// its last write is compacted away.
func (a *Agent) reattach(o CompactionOptions, evs []session.Event, cutIdx int) ([]llm.Part, int) {
	readTools := map[string]bool{}
	for _, n := range o.ReadTools {
		readTools[n] = true
	}
	paths := map[llm.CallID]string{}
	type read struct {
		path string
		text string
	}
	var reads []read // in log order
	keptPaths := map[string]bool{}
	var todo *session.TodoWrite
	todoIdx := -1
	for i := range evs {
		switch p := evs[i].Data.(type) {
		case *session.ToolCall:
			if readTools[p.Name] {
				var args struct {
					Path     string `json:"path"`
					FilePath string `json:"file_path"`
				}
				if json.Unmarshal(p.Args, &args) == nil {
					paths[p.CallID] = cmpOr(args.Path, args.FilePath)
				}
			}
		case *session.ToolResult:
			path, ok := paths[p.CallID]
			if !ok || path == "" || p.IsError {
				continue
			}
			if i > cutIdx {
				keptPaths[path] = true
				continue
			}
			reads = append(reads, read{path, partsText(p.Parts)})
		case *session.TodoWrite:
			todo, todoIdx = p, i
		}
	}
	var parts []llm.Part
	n, bytes := 0, 0
	seen := map[string]bool{}
	for i := len(reads) - 1; i >= 0 && n < o.ReattachFiles; i-- {
		r := reads[i]
		if seen[r.path] || keptPaths[r.path] {
			continue
		}
		seen[r.path] = true
		if bytes+len(r.text) > o.ReattachBytes {
			continue
		}
		bytes += len(r.text)
		n++
		parts = append(parts, &llm.Text{Text: fmt.Sprintf("The file %s as last read before the conversation was compacted (read it again before editing it):\n%s", r.path, r.text)})
	}
	slices.Reverse(parts)
	if todo != nil && todoIdx <= cutIdx && len(todo.Items) > 0 {
		var b strings.Builder
		b.WriteString("The todo list as last written:\n")
		for _, it := range todo.Items {
			data, _ := json.Marshal(it)
			b.Write(data)
			b.WriteByte('\n')
		}
		parts = append(parts, &llm.Text{Text: b.String()})
		n++
	}
	return parts, n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// autoCompact compacts during a run, between steps (or after a request
// the provider found too long). It reports whether the history changed.
// Failures count toward the circuit breaker; the run goes on either way.
func (r *runState) autoCompact(overflow bool) bool {
	a := r.a
	if r.compactOff || a.opts.Compaction == nil {
		return false
	}
	o := a.compactOpts()
	keep := max(o.KeepSteps, 0)
	tailCap := a.compactAt() / 2
	if overflow {
		tailCap = a.usable() / 4
	}
	// An attempt that cannot get under the threshold is not repeated
	// until the request has grown by a tenth of the window: reading the
	// log every step would cost what the history holds.
	retryAt := a.requestTokens() + a.usable()/10
	plan, err := a.compact(r.ctx, a.targets[r.target], keep, "", true, tailCap)
	if errors.Is(err, ErrNothingToCompact) {
		r.compactRetryAt = retryAt
		return false
	}
	if err == nil {
		r.addUsage(r.provs[r.target], plan.res.Usage)
		for _, p := range plan.payloads {
			r.emit(p)
		}
		if !r.flush() {
			return false
		}
		plan.res.TokensAfter = a.requestTokens()
		r.compactFails = 0
		r.compactRetryAt = 0
		if plan.res.TokensAfter >= a.compactAt() {
			r.compactRetryAt = plan.res.TokensAfter + a.usable()/10
		}
		a.compacted(r.ctx, plan, true)
		return true
	}
	if r.isCancelled() {
		return false
	}
	r.compactFails++
	a.log.Warn("automatic compaction failed; the history is unchanged", "session", a.sid, "turn", r.turn, "failures", r.compactFails, "err", err)
	if r.compactFails >= o.MaxFailures {
		r.compactOff = true
		r.emit(&session.Repair{Kind: "compaction-disabled", Detail: fmt.Sprintf("automatic compaction failed %d times in a row; it is off for the rest of this run (last error: %v)", r.compactFails, err)})
		r.flush()
	}
	return false
}
