package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
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
	sys      systemPrompt
	sampling json.RawMessage
	template llm.Request
	window   int64 // context window; 0 when unknown
	reserve  int64 // output reserve
	maxSteps int
	retry    RetryPolicy
	calls    callRunner // how tool calls run
	watch    *cachewatch.Watcher

	// The tools: Options.Tools and ToolSet's, then the sets
	// Options.DynamicTools returned last. A step takes the current toolbox
	// and the header keys that name it (one per target).
	baseTools []tool.Tool
	dynSets   []*tool.Set
	tb        atomic.Pointer[toolbox]
	target    atomic.Int32 // the target the run in flight uses
	keys      atomic.Pointer[[]string]

	store    session.Store
	ownStore bool // the agent made the store and closes it
	bus      *hook.Bus
	unsub    []func()
	w        *logWriter

	// mu guards the run in flight's control and what follows.
	mu         sync.Mutex
	ctl        *control
	closed     bool
	compacting bool          // a manual compaction is in flight
	idle       chan struct{} // closed while idle
	wg         sync.WaitGroup
	toolsWG    sync.WaitGroup // the workers, and the tool calls left behind after a cancel
	carried    carried        // what a suspended run left for the next

	kin kin // the agent's place in a tree of subagents
}

// New returns an agent over the session in opts (opened, repaired, or
// created). Close it when done.
func New(opts *Options) (*Agent, error) {
	if opts == nil {
		opts = &Options{}
	}
	a := &Agent{opts: *opts, idle: make(chan struct{})}
	close(a.idle)
	if err := a.resolve(); err != nil {
		return nil, err
	}
	a.sys = newSystemPrompt(opts.System, opts.SystemSections)
	if opts.Request != nil {
		a.template = *opts.Request
		a.template.Messages, a.template.System, a.template.Tools = nil, nil, nil
	}
	if opts.PromptCache != nil {
		c := *opts.PromptCache
		a.template.Cache = &c
	}
	a.sampling = samplingOf(&a.template)
	a.resolveWindow()
	a.watch = cachewatch.New(&cachewatch.Options{SectionNames: a.sys.names()}) // wall clock: the cache lives in real time
	a.baseTools = opts.Tools
	if opts.ToolSet != nil {
		a.baseTools = append(a.baseTools[:len(a.baseTools):len(a.baseTools)], opts.ToolSet.Tools()...)
	}
	tools := a.baseTools
	if opts.DynamicTools != nil {
		a.dynSets = opts.DynamicTools()
		tools = withSets(a.baseTools, a.dynSets)
	}
	b, err := newToolbox(tools, opts.ToolSet, opts.DryRun)
	if err != nil {
		return nil, err
	}
	a.setToolbox(b)
	a.store = opts.Store
	if a.store == nil {
		a.store, a.ownStore = session.NewMemStore(), true
	}
	a.bus = hook.NewBus(&hook.BusOptions{Buffer: opts.ObserverBuffer, Logger: a.log})
	for _, s := range opts.Hooks.Observers() {
		a.unsub = append(a.unsub, a.bus.Subscribe(s))
	}
	a.w = &logWriter{store: a.store, bus: a.bus, agent: opts.Name, now: a.opts.Now, durable: opts.Durable}
	if err := a.w.open(context.Background(), opts.Session); err != nil {
		a.bus.Close()
		return nil, err
	}
	return a, nil
}

// resolve fills in the defaults of the options and the model targets.
func (a *Agent) resolve() error {
	o := &a.opts
	a.log = o.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if o.Model != nil {
		a.targets = append(a.targets, Target{Provider: o.Provider, Model: o.ModelName, Client: o.Model})
	}
	for _, t := range o.Fallbacks {
		if t.Client == nil {
			return fmt.Errorf("agent: fallback %s/%s has no Client", t.Provider, t.Model)
		}
		a.targets = append(a.targets, t)
	}
	if len(a.targets) == 0 {
		return ErrNoModel
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Cost == nil {
		o.Cost = catalogCost
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.NewID == nil {
		o.NewID = randomID
	}
	if o.Jitter == nil {
		o.Jitter = mrand.Float64
	}
	a.retry = DefaultRetry
	if o.Retry != nil {
		a.retry = *o.Retry
	}
	a.maxSteps = cmp.Or(max(o.Limits.MaxSteps, 0), 100)
	a.calls = callRunner{parallel: cmp.Or(max(o.Parallel, 0), 8), grace: cmp.Or(max(o.ToolGrace, 0), 2*time.Second),
		now: o.Now, state: o.State, approver: o.Approver, dryRun: o.DryRun, durable: o.Durable, log: a.log, workers: newWorkers(&a.toolsWG)}
	return nil
}

// Session returns the id of the agent's session.
func (a *Agent) Session() session.ID { return a.w.session() }

// Store returns the agent's store.
func (a *Agent) Store() session.Store { return a.store }

// Messages returns the history the next request would be built from.
func (a *Agent) Messages() []llm.Message { return a.w.messages() }

// ObserverStats reports delivery, drops and panics of every observer.
func (a *Agent) ObserverStats() []hook.ObserverStats { return a.bus.Stats() }

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
	a.watch.Reset()
	a.carried = carried{}
	return a.w.open(ctx, "")
}

// Close cancels any run (its turn ends aborted{close}), waits for it and
// for tool calls left behind, closes tools that hold resources (io.Closer,
// found through any wrapper) and stops every observer goroutine. A store
// passed in Options is the caller's to close; the in-memory one made for
// a nil Store is closed. Close is idempotent. It waits for the run, so a
// hook, tool or model of that run must call Cancel instead.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.wg.Wait()
		return nil
	}
	a.closed = true
	if a.ctl != nil {
		a.ctl.cancelLocked("close")
	}
	a.mu.Unlock()
	a.wg.Wait()
	var errs []error
	for _, e := range a.tb.Load().byName {
		if a.kin.borrowed[e.spec.Name] {
			continue // the parent's tool: the parent closes it
		}
		if c, ok := tool.As[io.Closer](e.t); ok {
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
	a.calls.workers.close()
	a.toolsWG.Wait()
	errs = append(errs, a.kin.closeAdopted()...)
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
