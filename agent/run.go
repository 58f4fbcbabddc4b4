package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// queued is a message waiting for a step boundary.
type queued struct {
	parts  []llm.Part
	source string
}

// runState is one Run or Stream call.
type runState struct {
	a      *Agent
	ctx    context.Context
	wctx   context.Context // ctx without its cancellation, for writes
	cancel context.CancelCauseFunc
	id     session.RunID
	turn   session.TurnID
	chain  hook.Chain
	sink   func(session.Event) bool
	sunk   bool // the sink's consumer went away

	maxSteps      int
	schema        json.RawMessage
	schemaV       *validator
	schemaRetried bool

	// Guarded by a.mu.
	cause       string
	cancelled   bool
	ending      bool
	steers      []queued
	followUps   []queued
	injects     []queued
	lateInjects []queued
	running     map[llm.CallID]*callState
	settled     map[llm.CallID]bool
	parked      map[llm.CallID]string
	kick        chan struct{}

	// Owned by the loop goroutine.
	fatal      error
	events     [][]session.Event // the run's events, in chunks so growth never copies
	out        []session.Event   // written but not yet given to the sink
	target     int
	step       int
	steps      int
	usage      llm.Usage
	cost       float64
	byModel    map[string]*ModelUsage
	ttft       time.Duration
	started    time.Time
	stepStart  time.Time
	repeatKey  string
	repeatN    int
	toolCounts map[string]int
	stepBytes  int
	final      llm.Message
	hasFinal   bool
	bat        batch       // reused by each step's tool calls
	req        llm.Request // reused by each step's model request
	states     []callState // reused call states
	leaked     bool        // a call was left behind: states and channels are not reused
	output     json.RawMessage
	firstChunk bool
	provs      []*llm.Provenance

	compactFails int  // automatic compactions failed in a row
	compactOff   bool // the circuit breaker tripped for this run
	// compactRetryAt is the size the request must reach before the next
	// automatic attempt, after one that could not get under the threshold.
	compactRetryAt int64
}

func (r *runState) accepting() bool { return !r.cancelled && !r.ending }

func (r *runState) cancelLocked(cause string) {
	if r.cancelled {
		return
	}
	r.cancelled = true
	r.cause = cause
	r.cancel(&cancelError{cause})
	r.kickLocked()
}

func (r *runState) kickLocked() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

type cancelError struct{ cause string }

func (e *cancelError) Error() string { return "agent: run cancelled (" + e.cause + ")" }

func (r *runState) isCancelled() bool { return r.ctx.Err() != nil }

func (r *runState) causeOf() string {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	if r.cause == "" {
		return "parent" // the caller's context was cancelled
	}
	return r.cause
}

// emit queues an event of this run's turn.
func (r *runState) emit(p session.Payload) {
	a := r.a
	a.logMu.Lock()
	a.emitLocked(r.turn, r.id, p)
	a.logMu.Unlock()
}

// flush writes the queued events and gives them to the sink. A failed
// write is fatal to the run.
func (r *runState) flush() bool {
	if r.fatal != nil {
		return false
	}
	a := r.a
	a.logMu.Lock()
	batch, err := a.flushLocked(r.wctx)
	if err == nil {
		r.keep(batch)
		if r.sink != nil && !r.sunk {
			r.out = append(r.out, batch...)
		}
	}
	a.logMu.Unlock()
	if err != nil {
		r.fatal = err
		a.log.Error("append failed; the run stops", "session", a.sid, "err", err)
		return false
	}
	r.drain()
	return true
}

// keep remembers written events for the Result.
func (r *runState) keep(batch []session.Event) {
	const chunk = 256
	for len(batch) > 0 {
		n := len(r.events)
		if n == 0 || len(r.events[n-1]) == cap(r.events[n-1]) {
			r.events = append(r.events, make([]session.Event, 0, chunk))
			n++
		}
		last := &r.events[n-1]
		k := min(cap(*last)-len(*last), len(batch))
		*last = append(*last, batch[:k]...)
		batch = batch[k:]
	}
}

// drain gives written events to the sink, outside the log lock.
func (r *runState) drain() {
	for i := range r.out {
		if r.sunk {
			break
		}
		if !r.sink(r.out[i]) {
			r.sunk = true
			r.a.Cancel("stream-closed")
		}
	}
	r.out = r.out[:0]
}

func (r *runState) scope() hook.Scope {
	return hook.Scope{Session: r.a.sid, Turn: r.turn, Run: r.id, Agent: r.a.opts.Name, Step: r.step}
}

func (r *runState) records(recs []hook.Record, call llm.CallID) {
	for _, rec := range recs {
		r.emit(rec.Event(call))
	}
}

// Run sends the prompt and blocks until the turn ends. A turn that ends
// otherwise than completed returns a Result and, for errors, budgets and
// hook failures, an error (*TurnError, *BudgetError, *hook.Error inside).
// A second Run while one is in flight returns ErrBusy at once.
func (a *Agent) Run(ctx context.Context, req *RunRequest) (*Result, error) {
	return a.start(ctx, req, nil)
}

// Stream is Run as a sequence of events: every event written to the log,
// in seq order, plus transient stream deltas — *session.AssistantChunk
// events with Seq 0 that are never written. Breaking out of the loop
// cancels the run (cause "stream-closed"); the turn is still closed on
// the log. A run failure is the last value, as an error.
func (a *Agent) Stream(ctx context.Context, req *RunRequest) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		open := true
		sink := func(ev session.Event) bool {
			if open {
				open = yield(ev, nil)
			}
			return open
		}
		_, err := a.start(ctx, req, sink)
		if err != nil && open {
			yield(session.Event{}, err)
		}
	}
}

func (a *Agent) start(ctx context.Context, req *RunRequest, sink func(session.Event) bool) (*Result, error) {
	if req == nil {
		req = &RunRequest{}
	}
	parts := req.Parts
	if len(parts) == 0 && req.Prompt != "" {
		parts = []llm.Part{&llm.Text{Text: req.Prompt}}
	}
	if len(parts) == 0 {
		return nil, ErrEmptyPrompt
	}
	var schemaV *validator
	if len(req.Schema) > 0 {
		v, err := newValidator(req.Schema)
		if err != nil {
			return nil, fmt.Errorf("agent: output schema: %w", err)
		}
		schemaV = v
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, ErrClosed
	}
	if a.cur != nil || a.compacting {
		a.mu.Unlock()
		return nil, ErrBusy
	}
	rctx, cancel := context.WithCancelCause(ctx)
	var r *runState
	rctx = hook.WithNotes(rctx, func(d *session.HookDecision) { r.emit(d) })
	r = &runState{
		a: a, ctx: rctx, wctx: context.WithoutCancel(rctx), cancel: cancel, id: session.RunID(a.opts.NewID()),
		chain: hook.Join(a.opts.Hooks, req.Hooks), sink: sink,
		maxSteps: a.maxSteps, schema: req.Schema, schemaV: schemaV,
		running: map[llm.CallID]*callState{}, settled: map[llm.CallID]bool{}, parked: map[llm.CallID]string{},
		kick: make(chan struct{}, 1), started: a.opts.Now(), byModel: map[string]*ModelUsage{},
		toolCounts: map[string]int{}, provs: make([]*llm.Provenance, len(a.targets)),
	}
	if req.MaxSteps > 0 {
		r.maxSteps = req.MaxSteps
	}
	for i, t := range a.targets {
		r.provs[i] = &llm.Provenance{Provider: t.Provider, Model: t.Model}
	}
	a.cur = r
	a.idle = make(chan struct{})
	a.wg.Add(1)
	a.mu.Unlock()

	var unsub []func()
	for _, s := range req.Hooks.Observers() {
		unsub = append(unsub, a.bus.Subscribe(s))
	}
	dropsBefore := a.drops()
	res, err := r.guardedTurn(parts)
	if res != nil {
		if res.ObserverDrops = a.drops() - dropsBefore; res.ObserverDrops > 0 {
			a.log.Warn("observers were too slow; events were dropped for them", "session", a.sid, "run", r.id, "dropped", res.ObserverDrops)
		}
	}

	a.mu.Lock()
	late := append(r.injects, r.lateInjects...)
	r.injects, r.lateInjects = nil, nil
	if len(late) > 0 {
		a.logMu.Lock()
		a.injectLocked(late...)
		if _, ferr := a.flushLocked(r.wctx); ferr != nil && err == nil {
			err = ferr
		}
		a.logMu.Unlock()
	}
	a.cur = nil
	close(a.idle)
	a.mu.Unlock()
	cancel(nil)
	for _, u := range unsub {
		u()
	}
	a.wg.Done()
	return res, err
}

// guardedTurn runs the turn; a panic on the loop's goroutine (a Model
// that panics, a bug) is not let loose on the caller: the turn is closed
// on the log as interrupted and the panic becomes an error.
func (r *runState) guardedTurn(parts []llm.Part) (res *Result, err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		a := r.a
		a.log.Error("the loop panicked; the turn is closed as interrupted", "session", a.sid, "turn", r.turn, "panic", fmt.Sprint(v))
		r.flush()
		var evs []session.Event
		for _, c := range r.events {
			evs = append(evs, c...)
		}
		a.logMu.Lock()
		a.pending = a.pending[:0]
		if n := len(evs); n > 0 {
			a.seq = evs[n-1].Seq
		}
		fix := session.RepairEvents(evs, a.opts.Now())
		if len(fix) > 0 {
			if aerr := a.store.Append(r.wctx, a.sid, fix...); aerr == nil {
				for i := range fix {
					a.account(&fix[i])
				}
				a.hist.Add(fix...)
				r.keep(fix)
			}
		}
		a.logMu.Unlock()
		res = r.result(session.EndInterrupted, "")
		err = &TurnError{Reason: session.EndInterrupted, Code: "panic", Err: fmt.Errorf("agent: the loop panicked: %v", v)}
	}()
	return r.runTurn(parts)
}

// drops counts the events observers have lost so far.
func (a *Agent) drops() int64 {
	if !a.bus.Has() {
		return 0
	}
	var n int64
	for _, st := range a.bus.Stats() {
		n += st.Dropped
	}
	return n
}

// runTurn runs one turn from its prompt to its end.
func (r *runState) runTurn(parts []llm.Part) (*Result, error) {
	a := r.a
	a.logMu.Lock()
	a.turns++
	r.turn = session.TurnID("turn-" + itoa(a.turns))
	a.logMu.Unlock()
	r.emit(&session.TurnStart{Trigger: session.TriggerPrompt})

	out, err := r.chain.Prompt(r.ctx, &hook.PromptInput{Scope: r.scope(), Parts: parts, Source: session.SourceUser})
	r.records(out.Records, "")
	if err != nil {
		var he *hook.Error
		name := ""
		if errors.As(err, &he) {
			name = he.Hook
		}
		r.emit(&session.PromptBlocked{Reason: err.Error(), Hook: name})
		return r.end(session.EndError, "", err.Error(), "hook", err)
	}
	if out.Denied != nil {
		reason := out.Denied.Reason
		if reason == "" {
			reason = "The prompt was blocked"
		}
		r.emit(&session.PromptBlocked{Reason: reason, Hook: out.Hook})
		return r.end(session.EndBlocked, "", reason, "", nil)
	}
	r.emit(&session.UserMessage{Parts: out.Parts, Source: session.SourceUser})
	return r.loop()
}

// end closes the turn and builds the result.
func (r *runState) end(reason session.EndReason, cause, msg, code string, err error) (*Result, error) {
	r.a.log.Debug("turn ended", "session", r.a.sid, "turn", r.turn, "run", r.id, "reason", reason, "cause", cause, "steps", r.steps)
	if r.fatal == nil {
		// A steer accepted before the turn ended is kept on the record,
		// though no request will see it in this turn.
		r.a.mu.Lock()
		steers := r.steers
		r.steers, r.ending = nil, true
		r.a.mu.Unlock()
		for _, q := range steers {
			if parts, ok := r.admit(q); ok {
				r.emit(&session.SteeringMessage{Parts: parts, Source: q.source})
			}
		}
		r.emit(&session.TurnEnd{Reason: reason, Cause: cause, Message: msg, Code: code})
		r.flush()
	}
	res := r.result(reason, cause)
	if r.fatal != nil {
		return res, r.fatal
	}
	if err != nil {
		switch err.(type) {
		case *BudgetError, *TurnError:
		default:
			if reason == session.EndError {
				err = &TurnError{Reason: reason, Code: code, Err: err}
			}
		}
	}
	return res, err
}

// loop runs steps until the turn ends.
func (r *runState) loop() (*Result, error) {
	a := r.a
	for {
		r.deliver()
		if r.isCancelled() {
			return r.end(session.EndAborted, r.causeOf(), "", "", nil)
		}
		if r.step >= r.maxSteps {
			return r.end(session.EndMaxSteps, "", fmt.Sprintf("the turn reached its limit of %d steps", r.maxSteps), "", nil)
		}
		if berr := r.overBudget(); berr != nil {
			return r.end(session.EndBudget, "", berr.Error(), berr.Budget, berr)
		}
		if at := a.compactAt(); at > 0 && !r.compactOff && a.requestTokens() >= max(at, r.compactRetryAt) {
			r.autoCompact(false)
			if r.fatal != nil {
				return r.end(session.EndError, "", "", "", nil)
			}
		}
		r.step++
		r.steps++
		r.stepBytes = 0
		r.stepStart = a.opts.Now()
		r.emit(&session.StepStart{Step: r.step})
		a.refreshTools()
		r.header(a.targets[r.target], r.step == 1)
		// One write opens the step: what arrived since the last step, the
		// step's start and header. The request is built from it.
		if !r.flush() {
			return r.end(session.EndError, "", "", "", nil)
		}

		req, err := r.request()
		if err != nil {
			r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishError})
			return r.end(session.EndError, "", err.Error(), "pairing", err)
		}
		rout := hook.RequestOutcome{Request: req}
		if r.chain.Has(hook.PointRequest) {
			rout, err = r.chain.Request(r.ctx, &hook.RequestInput{Scope: r.scope(), Request: req})
			r.records(rout.Records, "")
		}
		if err != nil {
			r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishError})
			return r.end(session.EndError, "", err.Error(), "hook", err)
		}
		if st := rout.Stop; st != nil {
			finish := llm.FinishStop
			if st.Answer != "" {
				m := llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: st.Answer}}, Provenance: &llm.Provenance{Provider: "hook", Model: rout.Hook}}
				r.emit(&session.AssistantMessage{Parts: m.Parts, Provenance: m.Provenance, Finish: finish})
				r.final, r.hasFinal = m, true
			}
			r.emit(&session.StepEnd{Step: r.step, Finish: finish})
			if st.Answer != "" {
				return r.end(session.EndCompleted, "", st.Reason, "", nil)
			}
			return r.end(session.EndBlocked, "", st.Reason, "", nil)
		}
		req = rout.Request
		if !r.flush() {
			return r.end(session.EndError, "", "", "", nil)
		}

		asm, status, merr := r.callModel(req)
		switch status {
		case modelCancelled:
			if asm != nil {
				if m := asm.Partial(); len(m.Parts) > 0 {
					r.emit(&session.AssistantMessage{Parts: m.Parts, Provenance: m.Provenance, Usage: asm.Usage(), Finish: llm.FinishAborted, Interrupted: true})
					r.addUsage(m.Provenance, asm.Usage())
				}
			}
			r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishAborted})
			return r.end(session.EndAborted, r.causeOf(), "", "", nil)
		case modelFailed:
			r.emit(&session.StepEnd{Step: r.step, Finish: llm.FinishError})
			code := string(llm.KindOf(merr))
			return r.end(session.EndError, "", merr.Error(), code, merr)
		}

		finish := asm.FinishReason()
		var msg llm.Message
		if finish == llm.FinishMaxTokens {
			msg = asm.Partial() // the calls of a cut-off response are dropped whole
		} else {
			msg = asm.Message()
		}
		r.dedupeCalls(&msg)
		u := asm.Usage()
		if len(msg.Parts) > 0 || finish != llm.FinishStop {
			r.emit(&session.AssistantMessage{Parts: msg.Parts, Provenance: msg.Provenance, Usage: u, Finish: finish})
		}
		r.addUsage(msg.Provenance, u)
		r.final, r.hasFinal = msg, true

		var abort *turnEnd
		hasCalls := false
		if finish != llm.FinishMaxTokens {
			for _, p := range msg.Parts {
				if _, ok := p.(*llm.ToolCall); ok {
					hasCalls = true
					break
				}
			}
		}
		if hasCalls {
			// The assistant message is written with the first tool.call.
			abort = r.runTools(msg.Parts)
		}

		var sout hook.StepEndOutcome
		var serr error
		if r.chain.Has(hook.PointStepEnd) {
			in := &hook.StepEndInput{Scope: r.scope(), Message: &llm.Message{Role: msg.Role, Parts: msg.Parts, Provenance: msg.Provenance}, Usage: u, Finish: finish}
			sout, serr = r.chain.StepEnd(r.ctx, in)
			r.records(sout.Records, "")
		}
		r.emit(&session.StepEnd{Step: r.step, Usage: u, Finish: finish})
		r.flush() // the end of a step is a durability point
		switch {
		case r.fatal != nil:
			return r.end(session.EndError, "", "", "", nil)
		case r.isCancelled():
			return r.end(session.EndAborted, r.causeOf(), "", "", nil)
		case abort != nil:
			return r.end(abort.reason, "", abort.msg, abort.code, abort.err)
		case serr != nil:
			return r.end(session.EndError, "", serr.Error(), "hook", serr)
		case sout.Stop != nil:
			return r.end(session.EndBlocked, "", sout.Stop.Reason, "", nil)
		case finish == llm.FinishMaxTokens:
			return r.end(session.EndMaxTokens, "", "the model reached its output token limit", "", nil)
		case hasCalls:
			continue
		}

		// The model answered without a tool call.
		if r.schemaV != nil {
			out, verr := r.checkOutput(msg.Text())
			if verr == nil {
				r.output = out
			} else if !r.schemaRetried {
				r.schemaRetried = true
				r.emit(&session.UserMessage{Source: session.SourceSystem, Parts: []llm.Part{&llm.Text{Text: "Your answer is not valid JSON for the requested schema: " + verr.Error() + ". Reply again with only the JSON value."}}})
				continue
			} else {
				return r.end(session.EndError, "", verr.Error(), "invalid-output", fmt.Errorf("%w: %v", ErrInvalidOutput, verr))
			}
		}
		fout, ferr := r.chain.Finalize(r.ctx, &hook.FinalizeInput{Scope: r.scope(), Message: &llm.Message{Role: msg.Role, Parts: msg.Parts, Provenance: msg.Provenance}})
		r.records(fout.Records, "")
		if ferr != nil {
			return r.end(session.EndError, "", ferr.Error(), "hook", ferr)
		}
		if fout.Nudge != nil {
			text := fout.Nudge.Text
			if text == "" {
				text = "Continue."
			}
			r.emit(&session.UserMessage{Source: session.SourceHook, Parts: []llm.Part{&llm.Text{Text: text}}})
			continue
		}
		if fout.Stop != nil {
			r.a.mu.Lock()
			r.ending = true
			r.a.mu.Unlock()
			return r.end(session.EndCompleted, "", fout.Stop.Reason, "", nil)
		}
		if r.more() {
			continue
		}
		return r.end(session.EndCompleted, "", "", "", nil)
	}
}

// dedupeCalls renames a tool call whose id repeats one earlier in the same
// response, so every call pairs with exactly one result; each rename is
// recorded.
func (r *runState) dedupeCalls(m *llm.Message) {
	copied := false
	for i, p := range m.Parts {
		c, ok := p.(*llm.ToolCall)
		if !ok {
			continue
		}
		for _, q := range m.Parts[:i] {
			if d, ok := q.(*llm.ToolCall); ok && d.ID == c.ID {
				if !copied {
					m.Parts = append([]llm.Part(nil), m.Parts...)
					copied = true
				}
				nc := *c
				nc.ID = llm.CallID(string(c.ID) + "_" + itoa(i))
				m.Parts[i] = &nc
				r.emit(&session.Repair{Kind: "duplicate-id", CallID: c.ID, Detail: "a second call in one response used this id; renamed to " + string(nc.ID)})
				break
			}
		}
	}
}

// turnEnd is how a guard ends a turn.
type turnEnd struct {
	reason session.EndReason
	msg    string
	code   string
	err    error
}

// deliver records the queued injects and steers at a step boundary.
func (r *runState) deliver() {
	a := r.a
	a.mu.Lock()
	injects, steers := r.injects, r.steers
	r.injects, r.steers = nil, nil
	a.mu.Unlock()
	for _, q := range injects {
		r.emit(&session.ContextMessage{Parts: q.parts, Source: q.source})
	}
	if a.opts.Notices != nil {
		for _, n := range a.opts.Notices() {
			r.emit(&session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: n}}, Source: session.SourceSystem})
		}
	}
	if a.opts.Records != nil {
		for _, p := range a.opts.Records() {
			if !hostRecord(p) {
				a.log.Warn("a host record that would change the turn was dropped", "session", a.sid, "type", p.EventType())
				continue
			}
			r.emit(p)
		}
	}
	for _, q := range steers {
		if parts, ok := r.admit(q); ok {
			r.emit(&session.SteeringMessage{Parts: parts, Source: q.source})
		}
	}
}

// more reports whether the turn goes on after a final answer: steers or
// injects are waiting, or a follow-up was admitted. When it returns false
// the run is ending and refuses new steers and follow-ups.
func (r *runState) more() bool {
	a := r.a
	for {
		a.mu.Lock()
		if len(r.steers) > 0 || len(r.injects) > 0 {
			a.mu.Unlock()
			return true
		}
		fus := r.followUps
		r.followUps = nil
		if len(fus) == 0 {
			r.ending = true
			a.mu.Unlock()
			return false
		}
		a.mu.Unlock()
		admitted := false
		for _, q := range fus {
			if parts, ok := r.admit(q); ok {
				r.emit(&session.UserMessage{Parts: parts, Source: q.source})
				admitted = true
			}
		}
		if admitted {
			return true
		}
	}
}

// admit runs a message sent during the run (a steer, a follow-up) through
// the prompt-submit chain, like a prompt: edits apply, a deny or a failed
// handler keeps it from the model with a prompt.blocked record.
func (r *runState) admit(q queued) ([]llm.Part, bool) {
	if !r.chain.Has(hook.PointPrompt) {
		return q.parts, true
	}
	out, err := r.chain.Prompt(r.ctx, &hook.PromptInput{Scope: r.scope(), Parts: q.parts, Source: q.source})
	r.records(out.Records, "")
	if err != nil {
		var he *hook.Error
		name := ""
		if errors.As(err, &he) {
			name = he.Hook
		}
		r.emit(&session.PromptBlocked{Reason: err.Error(), Hook: name})
		return nil, false
	}
	if out.Denied != nil {
		reason := out.Denied.Reason
		if reason == "" {
			reason = "The message was blocked"
		}
		r.emit(&session.PromptBlocked{Reason: reason, Hook: out.Hook})
		return nil, false
	}
	return out.Parts, true
}

// request builds this step's request from the derived history and
// records the pairing repairs it needs.
func (r *runState) request() (*llm.Request, error) {
	a := r.a
	t := a.targets[r.target]
	a.logMu.Lock()
	msgs := a.hist.Messages()
	if len(a.hist.elided) > 0 {
		msgs = elide(msgs, a.hist.elided)
	}
	reps := a.hist.repairs()
	a.logMu.Unlock()
	if len(reps) > 0 {
		if a.opts.StrictPairing {
			return nil, fmt.Errorf("%w: %s of call %s", ErrUnpaired, reps[0].Kind, reps[0].CallID)
		}
		for i := range reps {
			r.emit(&reps[i])
		}
	}
	// The Model contract lets the caller reuse a request once its stream
	// is done, so each step refills the run's one request.
	req := &r.req
	*req = a.template
	req.Model = t.Model
	req.System = a.system
	req.Tools = a.specs
	req.Messages = msgs
	if len(r.schema) > 0 {
		req.ResponseFormat = &llm.ResponseFormat{Name: "output", Schema: r.schema}
	}
	return req, nil
}

// header writes a request header when the turn starts or what it names
// changes.
func (r *runState) header(t Target, first bool) {
	a := r.a
	key := a.keys[r.target]
	a.logMu.Lock()
	changed := key != a.lastKey
	a.lastKey = key
	a.logMu.Unlock()
	if !first && !changed {
		return
	}
	reason := "initial"
	if !first {
		reason = "change"
	}
	r.emit(&session.RequestHeader{Provider: t.Provider, Model: t.Model, Sampling: a.sampling, System: a.system, SystemHash: a.sysHash, Tools: a.toolList, ToolsHash: a.toolHash, Reason: reason})
}

type modelStatus int

const (
	modelOK modelStatus = iota
	modelCancelled
	modelFailed
)

// callModel sends req, retrying and falling back as the policy says. On
// cancellation it returns the assembler of the interrupted attempt (nil
// when the cancel came between attempts).
func (r *runState) callModel(req *llm.Request) (*llm.Assembler, modelStatus, error) {
	a := r.a
	shrinks, compacted := 0, false
	for {
		t := a.targets[r.target]
		var last error
		for attempt := 1; ; attempt++ {
			if r.isCancelled() {
				return nil, modelCancelled, nil
			}
			asm := &llm.Assembler{Provenance: r.provs[r.target]}
			r.watchBefore(req)
			err := r.stream(t, req, asm)
			// A failed attempt's partial usage is judged too; a zero one
			// (nothing reported) is ignored by the watcher.
			r.watchAfter(asm.Usage())
			if err == nil {
				return asm, modelOK, nil
			}
			if r.isCancelled() {
				return asm, modelCancelled, nil
			}
			var pe *llm.ProviderError
			if errors.As(err, &pe) && pe.Retryable() && attempt <= a.retry.MaxRetries {
				delay := r.backoff(attempt, pe.RetryAfter)
				a.log.Info("model request failed; retrying", "session", a.sid, "turn", r.turn, "attempt", attempt, "kind", pe.Kind, "status", pe.StatusCode, "delay", delay)
				r.emit(&session.Retry{Attempt: attempt, Kind: string(pe.Kind), Delay: delay, Error: err.Error()})
				if !r.flush() {
					return nil, modelFailed, r.fatal
				}
				if a.opts.Sleep(r.ctx, delay) != nil || r.isCancelled() {
					return nil, modelCancelled, nil
				}
				continue
			}
			if llm.KindOf(err) == llm.ErrContextTooLong {
				// Prefer a compaction when it is on, then elide results.
				if !compacted && a.opts.Compaction != nil && !r.compactOff {
					compacted = true
					if r.autoCompact(true) {
						if nreq, rerr := r.request(); rerr == nil {
							req = nreq
							attempt--
							continue
						}
					}
					if r.fatal != nil {
						return nil, modelFailed, r.fatal
					}
				}
				if shrinks < maxShrinks {
					if nreq, ok := r.shrink(req); ok {
						shrinks++
						req = nreq
						attempt-- // a smaller request is not a retry
						continue
					}
				}
				err = &overflowError{elided: len(a.hist.elided), compacted: compacted, err: err}
			}
			last = err
			break
		}
		if r.target+1 < len(a.targets) && canFallback(last) {
			next := a.targets[r.target+1]
			a.log.Warn("falling back to the next model", "session", a.sid, "from", t.Provider+"/"+t.Model, "to", next.Provider+"/"+next.Model, "err", last)
			r.emit(&session.Fallback{FromProvider: t.Provider, FromModel: t.Model, ToProvider: next.Provider, ToModel: next.Model, Reason: last.Error()})
			r.target++
			r.header(next, false)
			if !r.flush() {
				return nil, modelFailed, r.fatal
			}
			nreq := *req
			nreq.Model = next.Model
			req = &nreq
			continue
		}
		return nil, modelFailed, last
	}
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

// maxShrinks bounds the passes that elide tool results from a request the
// provider found too long.
const maxShrinks = 4

// textElided replaces the body of a tool result elided to fit the window.
const textElided = "[This tool result was elided to fit the context window; run the call again if you need it.]"

// shrink elides the older half of the tool results still whole in req,
// oldest first, records each, and returns the smaller request. It reports
// false when nothing is left to elide.
func (r *runState) shrink(req *llm.Request) (*llm.Request, bool) {
	a := r.a
	a.logMu.Lock()
	var whole []llm.CallID
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if tr, ok := p.(*llm.ToolResult); ok && !a.hist.elided[tr.CallID] && !isElided(tr) {
				whole = append(whole, tr.CallID)
			}
		}
	}
	a.logMu.Unlock()
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
	a.logMu.Lock()
	nreq := *req
	nreq.Messages = elide(req.Messages, a.hist.elided)
	a.logMu.Unlock()
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

// bit maps a block index to a bit of a set; indexes past 62 share the
// last bit, which forces synthetic ids on (harmless for calls with one).
func bit(i int) uint64 {
	if i < 0 || i > 62 {
		return 1 << 63
	}
	return 1 << uint(i)
}

// idPrefix names this step for synthetic call ids.
func (r *runState) idPrefix() string {
	return string(r.turn) + "_" + itoa(r.step)
}

// canFallback reports whether another target may succeed where this one
// failed: not for a request the providers would all reject.
func canFallback(err error) bool {
	switch llm.KindOf(err) {
	case llm.ErrInvalidRequest, llm.ErrContextTooLong:
		return false
	}
	return true
}

func (r *runState) backoff(attempt int, retryAfter time.Duration) time.Duration {
	p := r.a.retry
	d := p.Base
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	if p.Jitter > 0 {
		d += time.Duration(float64(d) * p.Jitter * (2*r.a.opts.Jitter() - 1))
	}
	if d < retryAfter {
		d = retryAfter
	}
	if p.MaxWait > 0 && d > p.MaxWait {
		d = p.MaxWait
	}
	if d < 0 {
		d = 0
	}
	return d
}

// stream plays one attempt into asm, giving deltas to the sink.
func (r *runState) stream(t Target, req *llm.Request, asm *llm.Assembler) error {
	var calls, named uint64 // tool-call block indexes seen, and those given an id
	defer func() {
		// Calls that came without an id get synthetic ones unique to the step.
		if calls&^named != 0 || calls&(1<<63) != 0 {
			asm.IDPrefix = r.idPrefix()
		}
	}()
	for c, err := range t.Client.Stream(r.ctx, req) {
		if err != nil {
			return err
		}
		switch c := c.(type) {
		case *llm.BlockStart:
			if c.Kind == llm.BlockToolCall {
				calls |= bit(c.Index)
				if c.ID != "" {
					named |= bit(c.Index)
				}
			}
		case *llm.ToolCallDelta:
			calls |= bit(c.Index)
			if c.ID != "" {
				named |= bit(c.Index)
			}
		}
		if !r.firstChunk {
			r.firstChunk = true
			r.ttft = r.a.opts.Now().Sub(r.started)
		}
		asm.Add(c)
		if (r.sink != nil && !r.sunk) || r.a.bus.Has() {
			r.delta(c)
		}
	}
	if !asm.Finished() {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		return &llm.ProviderError{Kind: llm.ErrTransport, Provider: t.Provider, Message: "the response stream ended without a finish"}
	}
	return nil
}

// delta gives one stream chunk to the sink as a transient event.
func (r *runState) delta(c llm.Chunk) {
	var d session.ChunkDelta
	switch c := c.(type) {
	case *llm.TextDelta:
		d = session.ChunkDelta{Index: c.Index, Kind: "text", Text: c.Text}
	case *llm.ReasoningDelta:
		d = session.ChunkDelta{Index: c.Index, Kind: "reasoning", Text: c.Text}
	case *llm.ToolCallDelta:
		d = session.ChunkDelta{Index: c.Index, Kind: "tool_call", Text: c.Args, ID: c.ID, Name: c.Name}
	case *llm.BlockStart:
		if c.Kind != llm.BlockToolCall {
			return
		}
		d = session.ChunkDelta{Index: c.Index, Kind: "tool_call", ID: c.ID, Name: c.Name}
	default:
		return
	}
	ev := session.Event{Time: r.a.opts.Now(), Session: r.a.sid, Turn: r.turn, Run: r.id, Agent: r.a.opts.Name,
		Data: &session.AssistantChunk{Step: r.step, Deltas: []session.ChunkDelta{d}}}
	r.a.bus.PublishTransient(ev)
	if r.sink != nil && !r.sunk && !r.sink(ev) {
		r.sunk = true
		r.a.Cancel("stream-closed")
	}
}

func (r *runState) overBudget() *BudgetError {
	l := r.a.opts.Limits
	if l.MaxTokens > 0 {
		if used := r.usage.Total(); used >= l.MaxTokens {
			return &BudgetError{Budget: "tokens", Limit: float64(l.MaxTokens), Used: float64(used)}
		}
	}
	if l.MaxCost > 0 && r.cost >= l.MaxCost {
		return &BudgetError{Budget: "cost", Limit: l.MaxCost, Used: r.cost}
	}
	return nil
}

func (r *runState) addUsage(p *llm.Provenance, u llm.Usage) {
	r.usage.Add(u)
	model := ""
	if p != nil {
		model = p.Model
	}
	mu := r.byModel[model]
	if mu == nil {
		mu = &ModelUsage{}
		r.byModel[model] = mu
	}
	mu.Steps++
	mu.Usage.Add(u)
	if r.a.opts.Cost != nil {
		c := r.a.opts.Cost(model, u)
		mu.Cost += c
		r.cost += c
	}
}

// checkOutput validates the final answer against the run's schema.
func (r *runState) checkOutput(answer string) (json.RawMessage, error) {
	text := trimFence(answer)
	out, _, err := r.schemaV.validate(json.RawMessage(text))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// trimFence removes a Markdown code fence around a JSON answer.
func trimFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return t
	}
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	} else {
		return t
	}
	if j := strings.LastIndex(t, "```"); j >= 0 {
		t = t[:j]
	}
	return strings.TrimSpace(t)
}

// hostRecord reports whether a host may add p to the log through
// Options.Records: bookkeeping only, nothing that shapes the turn or the
// model's input.
func hostRecord(p session.Payload) bool {
	switch p.(type) {
	case *session.MCPEvent, *session.SessionMeta, *session.HookDecision, *session.Repair, *session.Unknown:
		return true
	}
	return false
}
