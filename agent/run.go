package agent

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// runState is one Run or Stream call: the turn it writes and what the
// loop keeps while it runs. Only the loop's goroutine touches it, except
// ctl, which is guarded by the agent's mu.
type runState struct {
	a     *Agent
	w     *logWriter
	ctl   *control
	ctx   context.Context
	wctx  context.Context // ctx without its cancellation, for writes
	id    session.RunID
	sid   session.ID
	turn  session.TurnID
	chain hook.Chain
	sink  sink
	fatal error // a failed write: the run stops
	// The response being streamed: its calls, the stream's error, and
	// the function that takes its chunks.
	seen      seenCalls
	streamErr error
	onChunk   func(llm.Chunk, error) bool

	models   []llm.Model // the targets' clients, with the chain's model middleware
	target   int
	provs    []*llm.Provenance
	tb       *toolbox              // the tools of the current step
	toolMWs  []tool.Middleware     // the chain's tool middleware
	wrapped  map[string]*toolEntry // the step's tools within toolMWs, by name
	step     int
	maxSteps int
	req      llm.Request   // reused by each step's model request
	asm      llm.Assembler // reused by each attempt
	meter    meter
	final    llm.Message
	hasFinal bool
	output   output
	guards   *guards
	pipe     pipeline
	kids     children // the children this run spawned
	compact  compactState
	events   [][]session.Event // the run's events, in chunks so growth never copies
	resumed  bool              // the run continues a turn another run started
}

// turnEnd is how a turn ends: every exit of the loop is one.
type turnEnd struct {
	reason session.EndReason
	cause  string // who cancelled an aborted turn
	msg    string
	code   string
	err    error        // returned by Run
	open   []llm.CallID // the step's calls without a result, for a suspend
}

// errorEnd ends a turn with an error; code names its kind.
func errorEnd(code string, err error) *turnEnd {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return &turnEnd{reason: session.EndError, msg: msg, code: code, err: err}
}

// sink gives a Stream's consumer the run's events.
type sink struct {
	fn   func(session.Event) bool
	out  []session.Event // written but not yet given
	gone atomic.Bool     // the consumer went away
	// children: the run's subagents' events are given too
	// (RunRequest.Children); mu gives fn one event at a time.
	children bool
	mu       sync.Mutex
}

func (s *sink) wants() bool { return s.fn != nil && !s.gone.Load() }

// Run sends the prompt and blocks until the turn ends. A turn that ends
// otherwise than completed returns a Result and, for errors, budgets and
// hook failures, an error (*TurnError, *BudgetError, *hook.Error inside).
// A second Run while one is in flight returns ErrBusy at once.
func (a *Agent) Run(ctx context.Context, req *RunRequest) (*Result, error) {
	return a.start(ctx, req, nil)
}

// Stream is Run as a sequence of events: every event written to the log,
// in seq order, plus transient events — stream deltas
// (*session.AssistantChunk), tool progress, compaction progress — with
// Seq 0, which are never written. Breaking out of the loop cancels the
// run (cause "stream-closed"); the turn is still closed on the log. A run
// failure is the last value, as an error.
func (a *Agent) Stream(ctx context.Context, req *RunRequest) iter.Seq2[session.Event, error] {
	return streamOf(func(fn func(session.Event) bool) error {
		_, err := a.start(ctx, req, fn)
		return err
	})
}

// streamOf turns a run that gives each event to fn into a sequence of
// events, its failure the last value.
func streamOf(run func(fn func(session.Event) bool) error) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		open := true
		err := run(func(ev session.Event) bool {
			if open {
				open = yield(ev, nil)
			}
			return open
		})
		if err != nil && open {
			yield(session.Event{}, err)
		}
	}
}

func (a *Agent) start(ctx context.Context, req *RunRequest, fn func(session.Event) bool) (*Result, error) {
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
	return a.launch(ctx, req, fn, func(r *runState) (*Result, error) { return r.guardedTurn(parts) })
}

// launch starts a run of req that body drives, once no other is in
// flight, and tidies up after it.
func (a *Agent) launch(ctx context.Context, req *RunRequest, fn func(session.Event) bool, body func(*runState) (*Result, error)) (*Result, error) {
	out, err := newOutput(req.Schema)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, ErrClosed
	}
	if a.ctl != nil || a.compacting {
		a.mu.Unlock()
		return nil, ErrBusy
	}
	r := a.newRun(ctx, req, fn)
	r.output = out
	a.ctl = r.ctl
	a.idle = make(chan struct{})
	a.wg.Add(1)
	a.mu.Unlock()

	var unsub []func()
	for _, s := range req.Hooks.Observers() {
		unsub = append(unsub, a.bus.Subscribe(s))
	}
	dropsBefore := a.drops()
	var res *Result
	if fn == nil {
		res, err = r.coRun(body)
	} else {
		res, err = body(r)
	}
	r.sink.close() // a child that outlives the run gives it nothing more
	if res != nil {
		if res.ObserverDrops = a.drops() - dropsBefore; res.ObserverDrops > 0 {
			a.log.Warn("observers were too slow; events were dropped for them", "session", r.sid, "run", r.id, "dropped", res.ObserverDrops)
		}
	}
	a.mu.Lock()
	late := append(r.ctl.injects, r.ctl.lateInjects...)
	if len(late) > 0 && res != nil && res.Reason == session.EndSuspended {
		a.carry(r, late, nil) // a record now would close the suspended turn
	} else if len(late) > 0 {
		if ferr := a.w.record(r.wctx, session.TriggerInject, contextOf(late...)...); ferr != nil && err == nil {
			err = ferr
		}
	}
	a.ctl = nil
	a.target.Store(0)
	close(a.idle)
	a.mu.Unlock()
	r.ctl.cancel(nil)
	for _, u := range unsub {
		u()
	}
	a.wg.Done()
	return res, err
}

// newRun readies the state of one run; a.mu is held.
func (a *Agent) newRun(ctx context.Context, req *RunRequest, fn func(session.Event) bool) *runState {
	rctx, cancel := context.WithCancelCause(ctx)
	r := &runState{a: a, w: a.w, ctl: newControl(cancel, &a.mu), id: session.RunID(a.opts.NewID()), sid: a.w.session(),
		sink: sink{fn: fn, children: req.Children}, maxSteps: a.maxSteps, meter: newMeter(a.opts.Now())}
	r.ctl.injects, r.ctl.steers, a.carried = a.carried.injects, a.carried.steers, carried{}
	r.ctl.finished = r.wroteResult
	r.ctx = withRun(hook.WithNotes(rctx, func(d *session.HookDecision) { r.emit(d) }), r)
	r.wctx = context.WithoutCancel(r.ctx)
	if req.MaxSteps > 0 {
		r.maxSteps = req.MaxSteps
	}
	r.guards = newGuards(r, a.opts.Limits)
	r.chain = hook.Join(a.chainSets(req.Hooks, r.guards.set)...).Recording(r.record)
	r.toolMWs = r.chain.ToolMiddleware()
	r.pipe = pipeline{run: r, ctx: r.ctx, chain: r.chain, ctl: r.ctl, x: &a.calls}
	mws := r.chain.ModelMiddleware()
	r.models = make([]llm.Model, len(a.targets))
	r.provs = make([]*llm.Provenance, len(a.targets))
	for i, t := range a.targets {
		r.models[i] = llm.Wrap(t.Client, mws...)
		r.provs[i] = &llm.Provenance{Provider: t.Provider, Model: t.Model}
	}
	return r
}

// record writes a decision as it is taken. A replaced request is written
// once the chain is done, with the request that is sent (see replaced).
func (r *runState) record(rec hook.Record) {
	if rec.Point == hook.PointRequest && rec.Decision == hook.DecisionReplace {
		return
	}
	r.emit(rec.Event())
}

// guardedTurn runs the turn; a panic on the loop's goroutine (a Model
// that panics, a bug), or one outside a tool's body on the goroutine
// that ran the call (a tool.StateStore that panics), is not let loose on
// the caller: the turn is closed on the log as interrupted and the panic
// becomes an error.
func (r *runState) guardedTurn(parts []llm.Part) (res *Result, err error) {
	defer r.recovered(&res, &err)
	if err := r.w.closeOpen(r.wctx); err != nil {
		return nil, err
	}
	r.turn = r.w.nextTurn()
	r.emit(&session.TurnStart{Trigger: session.TriggerPrompt})
	r.pin()
	p, end := r.admit(queued{parts, session.SourceUser})
	if end == nil {
		r.emit(&session.UserMessage{Parts: p, Source: session.SourceUser})
		end = r.loop()
	}
	return r.finish(*end)
}

// recovered, deferred by a run's body, turns a panic of the loop into a
// turn closed as interrupted and an error.
func (r *runState) recovered(res **Result, err *error) {
	v := recover()
	if v == nil {
		return
	}
	r.a.log.Error("the loop panicked; the turn is closed as interrupted", "session", r.sid, "turn", r.turn, "panic", fmt.Sprint(v))
	r.flush()
	var evs []session.Event
	for _, c := range r.events {
		evs = append(evs, c...)
	}
	if r.resumed {
		evs, _ = r.w.openEvents(r.wctx) // the turn started in another run
	}
	fix := r.w.discard(r.wctx, evs)
	r.w.mu.Lock() // wroteResult reads the kept events under it
	r.keep(fix)
	r.w.mu.Unlock()
	*res = r.result(session.EndInterrupted, "")
	*err = &TurnError{Reason: session.EndInterrupted, Code: "panic", Err: fmt.Errorf("agent: the loop panicked: %v", v)}
}

// loop runs steps until the turn ends.
func (r *runState) loop() *turnEnd {
	for {
		if end := r.openStep(); end != nil {
			return end
		}
		if end := r.runStep(); end != nil {
			return end
		}
	}
}

// finish closes the turn on the log and builds the result.
func (r *runState) finish(e turnEnd) (*Result, error) {
	r.a.log.Debug("turn ended", "session", r.sid, "turn", r.turn, "run", r.id, "reason", e.reason, "cause", e.cause, "steps", r.meter.steps)
	if e.reason == session.EndSuspended {
		return r.suspended(e)
	}
	if r.fatal == nil {
		// A steer accepted before the turn ended is kept on the record,
		// though no request will see it in this turn.
		r.steer(r.endQueues())
		r.emit(&session.TurnEnd{Reason: e.reason, Cause: e.cause, Message: e.msg, Code: e.code})
		if r.flush() {
			// The end of a turn is durable before it is reported.
			if err := r.w.sync(r.wctx); err != nil {
				r.fatal = err
			}
		}
	}
	res := r.result(e.reason, e.cause)
	if r.fatal != nil {
		return res, r.fatal
	}
	err := e.err
	if err != nil && e.reason == session.EndError {
		switch err.(type) {
		case *BudgetError, *TurnError:
		default:
			err = &TurnError{Reason: e.reason, Code: e.code, Err: err}
		}
	}
	return res, err
}

// aborted is the end of a cancelled turn.
func (r *runState) aborted() *turnEnd {
	r.a.mu.Lock()
	cause := r.ctl.cause
	r.a.mu.Unlock()
	if cause == "" {
		cause = inheritedCause(r.ctx) // the caller's context was cancelled
	}
	return &turnEnd{reason: session.EndAborted, cause: cause}
}

func (r *runState) isCancelled() bool { return r.ctx.Err() != nil }

// emit queues an event of this run's turn.
func (r *runState) emit(p session.Payload) { r.w.emit(r.turn, r.id, p) }

// flush writes the queued events and gives them to the sink. A failed
// write is fatal to the run.
func (r *runState) flush() bool {
	if r.fatal != nil {
		return false
	}
	err := r.w.flush(r.wctx, func(batch []session.Event) {
		r.keep(batch)
		if r.sink.wants() {
			r.sink.out = append(r.sink.out, batch...)
		}
	})
	if err != nil {
		r.fatal = err
		r.a.log.Error("append failed; the run stops", "session", r.sid, "err", err)
		return false
	}
	r.drain()
	return true
}

// keep remembers written events for the Result. They are never changed
// once written (see logWriter.grow), so it keeps them where they are: a
// batch that follows the last one in the same block extends it.
func (r *runState) keep(batch []session.Event) {
	if len(batch) == 0 {
		return
	}
	if n := len(r.events); n > 0 {
		last := r.events[n-1]
		if k := len(last); k < cap(last) && &last[:k+1][k] == &batch[0] {
			r.events[n-1] = last[:k+len(batch)]
			return
		}
	}
	r.events = append(r.events, batch)
}

// wroteResult reports whether the run wrote a result for call id. It
// reads the kept events under the log's lock, which keep runs under: a
// host cancelling a call is rare, so a scan costs less than a set every
// call of the run joins.
func (r *runState) wroteResult(id llm.CallID) bool {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	for _, c := range r.events {
		for i := range c {
			if res, ok := c[i].Data.(*session.ToolResult); ok && res.CallID == id {
				return true
			}
		}
	}
	return false
}

// drain gives written events to the sink, outside the log lock.
func (r *runState) drain() {
	for i := range r.sink.out {
		if !r.give(r.sink.out[i]) {
			break
		}
	}
	r.sink.out = r.sink.out[:0]
}

// give hands one event to the sink; a consumer that went away cancels
// the run.
func (r *runState) give(ev session.Event) bool {
	if !r.sink.wants() {
		return false
	}
	if !r.sink.call(ev) {
		r.a.Cancel("stream-closed")
		return false
	}
	return true
}

// transient publishes an event that is never written, and gives it to
// the sink.
func (r *runState) transient(p session.Payload) {
	if r.listened() {
		r.give(r.w.publish(r.turn, r.id, p))
	}
}

// progress is the report function of one call: each report is a
// transient tool.progress event for observers.
func (r *runState) progress(id llm.CallID) func(tool.Progress) {
	if !r.a.observed() {
		return noProgress
	}
	return func(p tool.Progress) {
		r.w.publish(r.turn, r.id, &session.ToolProgress{CallID: id, Message: p.Message, Done: p.Done})
	}
}

var noProgress = func(tool.Progress) {}

// stopEnd is the end of the turn when a gate handler stopped it.
func (r *runState) stopEnd(hookName string, st *hook.Stop) *turnEnd {
	return r.guards.stopEnd(hookName, st)
}

// runTools runs one step's tool calls through the pipeline; plan, on a
// resume, says what their records hold.
func (r *runState) runTools(parts []llm.Part, plan *resumePlan) *turnEnd {
	return r.pipe.runStep(parts, plan)
}

// sync makes what the run wrote durable.
func (r *runState) sync() error { return r.w.sync(r.wctx) }

// listened reports whether anyone takes transient events.
func (r *runState) listened() bool { return r.sink.wants() || r.a.observed() }

func (r *runState) scope() hook.Scope {
	return hook.Scope{Session: r.sid, Turn: r.turn, Run: r.id, Agent: r.a.opts.Name, Step: r.step}
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
