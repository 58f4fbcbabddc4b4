package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Errors callers branch on.
var (
	ErrBusy          = errors.New("agent: a run is already in flight; wait for it (WaitIdle) or cancel it")
	ErrClosed        = errors.New("agent: closed")
	ErrNoModel       = errors.New("agent: no model; set Options.Model or Options.Fallbacks")
	ErrIdle          = errors.New("agent: no run in flight")
	ErrCallFinished  = errors.New("agent: tool call already finished; nothing to cancel")
	ErrUnpaired      = errors.New("agent: history has unpaired tool calls and StrictPairing is set")
	ErrInvalidOutput = errors.New("agent: the final answer does not match the requested schema")
	ErrEmptyPrompt   = errors.New("agent: empty prompt; set RunRequest.Prompt or Parts")
)

// BudgetError ends a turn whose next request would start over a budget.
type BudgetError struct {
	Budget string // "cost" or "tokens"
	Limit  float64
	Used   float64
}

// Error says which budget was reached and how to go on.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("agent: %s budget reached (used %g of %g); raise Limits.Max%s to continue", e.Budget, e.Used, e.Limit, map[string]string{"cost": "Cost", "tokens": "Tokens"}[e.Budget])
}

// TurnError is returned by Run when a turn ends with an error: a provider
// failure that retries and fallbacks could not overcome, a hook failure,
// an abort by a guard.
type TurnError struct {
	Reason session.EndReason
	Code   string
	Err    error
}

// Error says how the turn ended and why.
func (e *TurnError) Error() string { return fmt.Sprintf("agent: turn ended %s: %v", e.Reason, e.Err) }

// Unwrap returns the cause.
func (e *TurnError) Unwrap() error { return e.Err }

// Agent runs a model in a loop with tools over one session. It is safe for
// concurrent use; one run is in flight at a time.
type Agent struct {
	opts     Options
	log      *slog.Logger
	targets  []Target
	keys     []string // request header key of each target
	tools    map[string]*toolEntry
	specs    []llm.ToolSpec
	system   []llm.Text
	sections []SystemSection // the kind and name of each system section
	sysHash  string
	fixed    int64 // estimated tokens of the system prompt and tools
	window   int64 // context window; 0 when unknown
	reserve  int64 // output reserve
	watch    *cachewatch.Watcher
	toolHash string
	toolList []string
	// baseTools are Options.Tools and ToolSet's; dynSets the last sets
	// Options.DynamicTools returned. The tool fields above are swapped
	// whole under logMu when those sets change.
	baseTools []tool.Tool
	dynSets   []*tool.Set
	sampling  json.RawMessage
	template  llm.Request
	maxSteps  int
	retry     RetryPolicy
	grace     time.Duration
	parallel  int
	store     session.Store
	ownStore  bool // the agent made the store and closes it
	bus       *hook.Bus
	unsub     []func()

	// logMu guards the log writer: seq, the pending batch and the deriver.
	logMu   sync.Mutex
	sid     session.ID
	seq     int64
	pending []session.Event
	hist    *history
	turns   int    // turns in the session so far, for turn ids
	lastKey string // the last request header's key

	// mu guards the run state and the queues.
	mu         sync.Mutex
	cur        *runState
	closed     bool
	compacting bool          // a manual compaction is in flight
	idle       chan struct{} // closed while idle
	wg         sync.WaitGroup
	toolsWG    sync.WaitGroup // tool calls left behind after a cancel
}

type toolEntry struct {
	t      tool.Tool
	spec   tool.Spec
	v      *validator
	origin string // native, or what the tool says of itself (mcp)
}

// originOf says where a tool comes from: tools that are not rein's own
// (an MCP server's) tell by an Origin method.
func originOf(t tool.Tool) string {
	if o, ok := t.(interface{ Origin() string }); ok && o.Origin() != "" {
		return o.Origin()
	}
	return "native"
}

// New returns an agent over the session in opts (opened, repaired, or
// created). Close it when done.
func New(opts *Options) (*Agent, error) {
	if opts == nil {
		opts = &Options{}
	}
	a := &Agent{opts: *opts, idle: make(chan struct{})}
	close(a.idle)
	a.log = opts.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if opts.Model != nil {
		a.targets = append(a.targets, Target{Provider: opts.Provider, Model: opts.ModelName, Client: opts.Model})
	}
	for _, t := range opts.Fallbacks {
		if t.Client == nil {
			return nil, fmt.Errorf("agent: fallback %s/%s has no Client", t.Provider, t.Model)
		}
		a.targets = append(a.targets, t)
	}
	if len(a.targets) == 0 {
		return nil, ErrNoModel
	}
	if opts.Now == nil {
		a.opts.Now = time.Now
	}
	if opts.Cost == nil {
		a.opts.Cost = catalogCost
	}
	if opts.Sleep == nil {
		a.opts.Sleep = sleep
	}
	if opts.NewID == nil {
		a.opts.NewID = randomID
	}
	if opts.Jitter == nil {
		a.opts.Jitter = mrand.Float64
	}
	a.retry = DefaultRetry
	if opts.Retry != nil {
		a.retry = *opts.Retry
	}
	a.maxSteps = opts.Limits.MaxSteps
	if a.maxSteps <= 0 {
		a.maxSteps = 100
	}
	a.grace = opts.ToolGrace
	if a.grace <= 0 {
		a.grace = 2 * time.Second
	}
	a.parallel = opts.Parallel
	if a.parallel <= 0 {
		a.parallel = 8
	}
	a.baseTools = opts.Tools
	if opts.ToolSet != nil {
		a.baseTools = append(a.baseTools[:len(a.baseTools):len(a.baseTools)], opts.ToolSet.Tools()...)
	}
	tools := a.baseTools
	if opts.DynamicTools != nil {
		a.dynSets = opts.DynamicTools()
		tools = withSets(a.baseTools, a.dynSets)
	}
	if err := a.setTools(tools); err != nil {
		return nil, err
	}
	if opts.System != "" {
		a.system = append(a.system, llm.Text{Text: opts.System})
		a.sections = append(a.sections, SystemSection{Kind: SectionHost, Name: "system"})
	}
	for _, s := range opts.SystemSections {
		if s.Text == "" {
			continue
		}
		kind := s.Kind
		if kind == "" {
			kind = SectionOther
		}
		a.system = append(a.system, llm.Text{Text: s.Text})
		a.sections = append(a.sections, SystemSection{Kind: kind, Name: s.Name})
	}
	if len(a.system) > 0 {
		h := sha256.New()
		for _, s := range a.system {
			h.Write([]byte(s.Text))
			h.Write([]byte{0})
		}
		if len(a.system) == 1 {
			h = sha256.New()
			h.Write([]byte(a.system[0].Text)) // as before sections existed
		}
		a.sysHash = hex.EncodeToString(h.Sum(nil)[:8])
	}
	if opts.Request != nil {
		a.template = *opts.Request
		a.template.Messages, a.template.System, a.template.Tools = nil, nil, nil
	}
	if opts.PromptCache != nil {
		c := *opts.PromptCache
		a.template.Cache = &c
	}
	a.resolveWindow()
	a.fixed = a.fixedTokens()
	names := make([]string, len(a.sections))
	for i, s := range a.sections {
		names[i] = s.Kind
		if s.Name != "" {
			names[i] += ":" + s.Name
		}
	}
	a.watch = cachewatch.New(&cachewatch.Options{SectionNames: names}) // wall clock: the cache lives in real time
	a.sampling = samplingOf(&a.template)
	a.rekey()
	a.store = opts.Store
	if a.store == nil {
		a.store, a.ownStore = session.NewMemStore(), true
	}
	a.bus = hook.NewBus(&hook.BusOptions{Buffer: opts.ObserverBuffer, Logger: a.log})
	for _, s := range opts.Hooks.Observers() {
		a.unsub = append(a.unsub, a.bus.Subscribe(s))
	}
	if err := a.open(context.Background(), opts.Session); err != nil {
		a.bus.Close()
		return nil, err
	}
	return a, nil
}

// rekey computes the request-header key of each target, which names
// what a request.header records.
func (a *Agent) rekey() {
	a.keys = a.keys[:0]
	for _, t := range a.targets {
		a.keys = append(a.keys, headerKey(t.Provider, t.Model, a.sysHash, a.toolHash, string(a.sampling)))
	}
}

// withSets returns base followed by the tools of sets.
func withSets(base []tool.Tool, sets []*tool.Set) []tool.Tool {
	out := base[:len(base):len(base)]
	for _, s := range sets {
		if s != nil {
			out = append(out, s.Tools()...)
		}
	}
	return out
}

// refreshTools takes up a change of Options.DynamicTools at a step
// boundary: the tools, their specs and the header key are rebuilt, so the
// next request offers the new list and records it. A list that cannot be
// used (two tools of one name) is logged and the old one kept.
func (a *Agent) refreshTools() {
	if a.opts.DynamicTools == nil {
		return
	}
	sets := a.opts.DynamicTools()
	if slices.Equal(sets, a.dynSets) {
		return
	}
	if err := a.setTools(withSets(a.baseTools, sets)); err != nil {
		a.log.Warn("the changed tool list is not usable; keeping the old one", "session", a.sid, "err", err)
		return
	}
	a.dynSets = sets
	a.logMu.Lock()
	a.rekey()
	a.fixed = a.fixedTokens()
	a.logMu.Unlock()
}

func (a *Agent) setTools(ts []tool.Tool) error {
	tools := make(map[string]*toolEntry, len(ts))
	var specs []llm.ToolSpec
	var names []string
	var hash string
	h := sha256.New()
	for _, t := range ts {
		var err error
		spec := t.Spec()
		if spec.Name == "" {
			return fmt.Errorf("agent: a tool has no name")
		}
		if _, dup := tools[spec.Name]; dup {
			return fmt.Errorf("agent: two tools are named %q; names must be unique", spec.Name)
		}
		var v *validator
		if tv, ok := t.(tool.Validated); ok && tv.Validator() != nil {
			v = &validator{tv.Validator()}
		} else if v, err = newValidator(spec.Schema); err != nil {
			return fmt.Errorf("agent: tool %q: %w", spec.Name, err)
		}
		origin := originOf(t)
		if a.opts.DryRun {
			t = tool.DryRun(t)
		}
		tools[spec.Name] = &toolEntry{t: t, spec: spec, v: v, origin: origin}
		schema := spec.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		specs = append(specs, llm.ToolSpec{Name: spec.Name, Description: spec.Description, Schema: schema})
		names = append(names, spec.Name)
		h.Write([]byte(spec.Name))
		h.Write([]byte{0})
		h.Write(schema)
		h.Write([]byte{0})
		h.Write([]byte(spec.Description))
		h.Write([]byte{0})
	}
	if len(specs) > 0 {
		hash = hex.EncodeToString(h.Sum(nil)[:8])
	}
	a.logMu.Lock()
	a.tools, a.specs, a.toolList, a.toolHash = tools, specs, names, hash
	a.logMu.Unlock()
	return nil
}

// open loads or creates the session and repairs an interrupted tail.
func (a *Agent) open(ctx context.Context, id session.ID) error {
	a.hist = newHistory()
	a.seq, a.turns, a.lastKey = 0, 0, ""
	if id == "" {
		nid, err := a.store.Create(ctx, &session.CreateRequest{})
		if err != nil {
			return fmt.Errorf("agent: create session: %w", err)
		}
		a.sid = nid
		return nil
	}
	a.sid = id
	if _, err := a.store.Info(ctx, id); errors.Is(err, session.ErrNotFound) {
		if _, err := a.store.Create(ctx, &session.CreateRequest{ID: id}); err != nil {
			return fmt.Errorf("agent: create session %s: %w", id, err)
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("agent: open session %s: %w", id, err)
	}
	var events []session.Event
	for ev, err := range a.store.Events(ctx, id, 0) {
		if err != nil {
			return fmt.Errorf("agent: read session %s: %w", id, err)
		}
		events = append(events, ev)
	}
	for i := range events {
		a.account(&events[i])
	}
	a.hist.Add(events...)
	if fix := session.RepairEvents(events, a.opts.Now()); len(fix) > 0 {
		for i := range fix {
			fix[i].Agent = a.opts.Name
		}
		if err := a.store.Append(ctx, id, fix...); err != nil {
			return fmt.Errorf("agent: repair the interrupted turn of session %s: %w", id, err)
		}
		for i := range fix {
			a.account(&fix[i])
		}
		a.hist.Add(fix...)
	}
	return nil
}

// account updates what the writer tracks from an existing event.
func (a *Agent) account(ev *session.Event) {
	a.seq = ev.Seq
	switch p := ev.Data.(type) {
	case *session.TurnStart:
		a.turns++
	case *session.RequestHeader:
		a.lastKey = headerKey(p.Provider, p.Model, p.SystemHash, p.ToolsHash, string(p.Sampling))
	}
}

func headerKey(provider, model, sys, tools, sampling string) string {
	return provider + "\x00" + model + "\x00" + sys + "\x00" + tools + "\x00" + sampling
}

// Session returns the id of the agent's session.
func (a *Agent) Session() session.ID {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	return a.sid
}

// Store returns the agent's store.
func (a *Agent) Store() session.Store { return a.store }

// Messages returns the history the next request would be built from.
func (a *Agent) Messages() []llm.Message {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	return a.hist.Messages()
}

// ObserverStats reports delivery, drops and panics of every observer.
func (a *Agent) ObserverStats() []hook.ObserverStats { return a.bus.Stats() }

// emitLocked queues an event for the next flush; logMu is held.
func (a *Agent) emitLocked(turn session.TurnID, run session.RunID, p session.Payload) {
	a.seq++
	a.pending = append(a.pending, session.Event{Seq: a.seq, Time: a.opts.Now(), Session: a.sid, Turn: turn, Run: run, Agent: a.opts.Name, Data: p})
}

// flushLocked appends the pending events in one write, then folds them
// into the history and tells observers. ctx should not be cancelled with
// the run: the closing events of a cancelled turn must still be written.
// into the history and tells observers. It returns the events written,
// valid until the next flush. On failure nothing is kept and seq rolls
// back. logMu is held.
func (a *Agent) flushLocked(ctx context.Context) ([]session.Event, error) {
	if len(a.pending) == 0 {
		return nil, nil
	}
	batch := a.pending
	a.pending = a.pending[:0]
	if err := a.store.Append(ctx, a.sid, batch...); err != nil {
		a.seq = batch[0].Seq - 1
		return nil, fmt.Errorf("agent: append to session %s: %w", a.sid, err)
	}
	a.hist.Add(batch...)
	for i := range batch {
		a.bus.Publish(batch[i])
	}
	return batch, nil
}

// Inject gives the model context without starting a turn. During a run it
// is delivered at the next step boundary; while idle it is recorded at
// once (durably) and the next request sees it.
func (a *Agent) Inject(ctx context.Context, parts ...llm.Part) error {
	if len(parts) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	if r := a.cur; r != nil && !r.ending {
		r.injects = append(r.injects, queued{parts, session.SourceUser})
		return nil
	}
	if r := a.cur; r != nil {
		r.lateInjects = append(r.lateInjects, queued{parts, session.SourceUser})
		return nil
	}
	a.logMu.Lock()
	defer a.logMu.Unlock()
	a.injectLocked(queued{parts, session.SourceUser})
	_, err := a.flushLocked(context.WithoutCancel(ctx))
	return err
}

// injectLocked records injected context outside a run: a turn of its own
// (trigger inject) with no step, so no request is made. logMu is held.
func (a *Agent) injectLocked(qs ...queued) {
	a.turns++
	turn := session.TurnID("turn-" + itoa(a.turns))
	a.emitLocked(turn, "", &session.TurnStart{Trigger: session.TriggerInject})
	for _, q := range qs {
		a.emitLocked(turn, "", &session.ContextMessage{Parts: q.parts, Source: q.source})
	}
	a.emitLocked(turn, "", &session.TurnEnd{Reason: session.EndCompleted})
}

// Steer sends a message to the running turn: it is recorded after the
// current step's tool results and the next request sees it. It returns
// false, queuing nothing, when no run is in flight, or the run is
// cancelled or ending; start a run with the message instead.
func (a *Agent) Steer(parts ...llm.Part) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.cur
	if r == nil || !r.accepting() || len(parts) == 0 {
		return false
	}
	r.steers = append(r.steers, queued{parts, session.SourceSteer})
	return true
}

// FollowUp queues a message for when the running turn would otherwise
// end; it then adds a step. It returns false, queuing nothing, when no run
// is in flight, or the run is cancelled or ending. A follow-up still
// queued when the turn ends another way (cancel, a limit, an error) is
// dropped.
func (a *Agent) FollowUp(parts ...llm.Part) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.cur
	if r == nil || !r.accepting() || len(parts) == 0 {
		return false
	}
	r.followUps = append(r.followUps, queued{parts, session.SourceFollowUp})
	return true
}

// Cancel cancels the run in flight with cause (user, parent, hook, …);
// the first cause wins. It reports whether a run was cancelled.
func (a *Agent) Cancel(cause string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil {
		return false
	}
	a.cur.cancelLocked(cause)
	return true
}

// CancelTool ends one tool call of the run in flight with an error result,
// leaving the others running. A call that has not started yet is parked
// and cancelled when it would start. It returns ErrCallFinished for a call
// that already has its result and ErrIdle when no run is in flight.
func (a *Agent) CancelTool(id llm.CallID, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.cur
	if r == nil {
		return ErrIdle
	}
	if reason == "" {
		reason = "cancelled"
	}
	if r.settled[id] {
		return ErrCallFinished
	}
	if c, ok := r.running[id]; ok {
		if c.returned && c.cancelReason == "" {
			return ErrCallFinished
		}
		if c.cancelReason == "" {
			c.cancelReason = reason
			c.cancel(errToolCancelled)
			r.kickLocked()
		}
		return nil
	}
	r.parked[id] = reason
	return nil
}

var errToolCancelled = errors.New("tool call cancelled")

// WaitIdle blocks until no run is in flight or ctx is done.
func (a *Agent) WaitIdle(ctx context.Context) error {
	a.mu.Lock()
	ch := a.idle
	a.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reset cancels any run, waits for it, and starts a new, empty session in
// the same store; queued messages are dropped. Like Close, it must not be
// called from inside the run it would wait for.
func (a *Agent) Reset(ctx context.Context) error {
	a.Cancel("reset")
	if err := a.WaitIdle(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	a.logMu.Lock()
	defer a.logMu.Unlock()
	a.watch.Reset()
	return a.open(ctx, "")
}

// Close cancels any run (its turn ends aborted{close}), waits for it and
// for tool calls left behind, closes tools that hold resources (io.Closer)
// and stops every observer goroutine. A store passed in Options is the
// caller's to close; the in-memory one made for a nil Store is closed.
// Close is idempotent. It waits for the run, so a hook, tool or model of
// that run must call Cancel instead.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.wg.Wait()
		return nil
	}
	a.closed = true
	if a.cur != nil {
		a.cur.cancelLocked("close")
	}
	a.mu.Unlock()
	a.wg.Wait()
	var errs []error
	for _, e := range a.tools {
		if c, ok := e.t.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("agent: close tool %s: %w", e.spec.Name, err))
			}
		}
	}
	for _, c := range a.opts.Closers {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: close: %w", err))
		}
	}
	a.toolsWG.Wait()
	for _, u := range a.unsub {
		u()
	}
	a.bus.Close()
	if a.ownStore {
		if err := a.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: close the in-memory store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// catalogCost prices usage at llm.DefaultCatalog's list prices; a model
// the catalog does not know costs nothing.
func catalogCost(model string, u llm.Usage) float64 {
	c, _ := llm.DefaultCatalog().Cost(model, u)
	return c
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func samplingOf(r *llm.Request) json.RawMessage {
	s := struct {
		Temperature      *float64              `json:"temperature,omitempty"`
		TopP             *float64              `json:"top_p,omitempty"`
		TopK             *int                  `json:"top_k,omitempty"`
		MaxTokens        int                   `json:"max_tokens,omitempty"`
		Stop             []string              `json:"stop,omitempty"`
		Seed             *int64                `json:"seed,omitempty"`
		PresencePenalty  *float64              `json:"presence_penalty,omitempty"`
		FrequencyPenalty *float64              `json:"frequency_penalty,omitempty"`
		Reasoning        *llm.ReasoningOptions `json:"reasoning,omitempty"`
		ToolChoice       llm.ToolChoice        `json:"tool_choice,omitzero"`
	}{r.Temperature, r.TopP, r.TopK, r.MaxTokens, r.Stop, r.Seed, r.PresencePenalty, r.FrequencyPenalty, r.Reasoning, r.ToolChoice}
	b, _ := json.Marshal(s)
	if string(b) == "{}" {
		return nil
	}
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }
