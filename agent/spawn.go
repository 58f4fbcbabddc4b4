package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// SpawnRequest is one child to start with Spawn.
type SpawnRequest struct {
	// Name is the child's name on its events; empty means "subagent".
	Name string
	// Prompt is the child's task; Parts, when set, replace it.
	Prompt string
	Parts  []llm.Part
	// Fork starts the child from the parent's log up to the step that
	// spawns it (its balanced prefix), with the parent's system prompt
	// and tools. Otherwise the child starts with an empty history.
	Fork bool
	// System is a fresh child's system prompt; empty takes the parent's.
	System string
	// Tools names the parent's tools the child may call; nil gives it all
	// of them. OwnTools are the child's own, after those.
	Tools    []string
	OwnTools []tool.Tool
	// Closers are resources behind OwnTools (a shell made for the child).
	// When the child ends — or the spawn fails — they are handed to the
	// parent, which closes them when it closes: background tasks the
	// child left running are never orphaned.
	Closers []io.Closer
	// Target is the child's model; nil uses the parent's models.
	Target *Target
	// Hooks are the child's own handlers, after the enforcement it
	// inherits (the Enforce sets of its ancestors).
	Hooks *hook.Set
	// Schema asks the child for a JSON answer valid against it.
	Schema json.RawMessage
	// MaxSteps caps the child's steps; zero takes the parent's limit.
	// MaxTokens and MaxCost cap its budgets; they are lowered to what
	// remains of the parent's budgets.
	MaxSteps  int
	MaxTokens int64
	MaxCost   float64
	// CallID is the spawning tool call, recorded on subagent events.
	CallID llm.CallID
}

// Spawn runs a child agent and returns its result. It must be called
// with the context of one of the agent's runs — from a tool or a hook of
// that run, as the spawn tool does — so the child is linked to that run:
// the parent's log records subagent.start (the child's session and run)
// and subagent.end (answer, end reason, usage and cost); the child's
// events are written to its own session in the same store, carry the
// parent's run as ParentRun and reach the parent's observers too (see
// Lineage for their depth). Cancelling ctx, the parent or the spawning
// call cancels the child with the same cause. The limits of
// Options.Subagents apply; a refused spawn returns an error wrapping
// ErrSpawnRefused.
func (a *Agent) Spawn(ctx context.Context, req *SpawnRequest) (*Result, error) {
	res, err := a.spawn(ctx, req)
	if req != nil && res == nil && len(req.Closers) > 0 {
		a.kin.adopt(req.Closers...) // the spawn failed: the parent closes them
	}
	return res, err
}

func (a *Agent) spawn(ctx context.Context, req *SpawnRequest) (*Result, error) {
	r := runOf(ctx)
	if r == nil || r.a != a {
		return nil, fmt.Errorf("%w: Spawn needs the context of a run of this agent; call it from a tool or hook of the run", ErrSpawnRefused)
	}
	if req == nil || (req.Prompt == "" && len(req.Parts) == 0) {
		return nil, fmt.Errorf("%w: the child has no task; set SpawnRequest.Prompt", ErrSpawnRefused)
	}
	o := a.opts.Subagents.resolved()
	name := req.Name
	if name == "" {
		name = "subagent"
	}
	depth := a.kin.depth + 1
	if depth > o.MaxDepth {
		return nil, fmt.Errorf("%w: %s is at depth %d and the depth limit is %d; do the work yourself", ErrSpawnRefused, agentLabel(a.opts.Name), a.kin.depth, o.MaxDepth)
	}
	limits, err := r.childLimits(req)
	if err != nil {
		return nil, err
	}
	release, err := a.acquire(ctx, r, req.CallID, name, o.MaxConcurrent)
	if err != nil {
		return nil, err
	}
	defer release()
	child, start, err := a.newChild(ctx, r, req, name, depth, limits)
	if err != nil {
		return nil, err
	}
	r.emit(start)
	parts := req.Parts
	if len(parts) == 0 {
		parts = []llm.Part{&llm.Text{Text: req.Prompt}}
	}
	fwd := r.forward()
	res, rerr := child.start(ctx, &RunRequest{Parts: parts, Schema: req.Schema, MaxSteps: limits.MaxSteps, Children: fwd != nil}, fwd)
	left := append(child.kin.takeAdopted(), req.Closers...)
	if cerr := child.Close(); cerr != nil {
		a.log.Warn("closing a subagent failed", "name", name, "err", cerr)
	}
	end := endOf(start, res, rerr)
	r.kids.add(childUsageOf(end))
	a.recordChild(r, end, left)
	return res, rerr
}

// childLimits are the child's limits: the request's, lowered to what
// remains of the parent's budgets.
func (r *runState) childLimits(req *SpawnRequest) (Limits, error) {
	pl := r.a.opts.Limits
	l := Limits{MaxSteps: req.MaxSteps, MaxTokens: req.MaxTokens, MaxCost: req.MaxCost,
		Repeat: pl.Repeat, ToolCalls: pl.ToolCalls, StepOutputBytes: pl.StepOutputBytes}
	if l.MaxSteps <= 0 {
		l.MaxSteps = r.a.maxSteps
	}
	spent := r.spentMeter()
	if pl.MaxTokens > 0 {
		left := pl.MaxTokens - spent.usage.Total()
		if left <= 0 {
			return l, fmt.Errorf("%w: the token budget is spent (%d of %d); raise Limits.MaxTokens", ErrSpawnRefused, spent.usage.Total(), pl.MaxTokens)
		}
		if l.MaxTokens <= 0 || l.MaxTokens > left {
			l.MaxTokens = left
		}
	}
	if pl.MaxCost > 0 {
		left := pl.MaxCost - spent.cost
		if left <= 0 {
			return l, fmt.Errorf("%w: the cost budget is spent ($%g of $%g); raise Limits.MaxCost", ErrSpawnRefused, spent.cost, pl.MaxCost)
		}
		if l.MaxCost <= 0 || l.MaxCost > left {
			l.MaxCost = left
		}
	}
	return l, nil
}

// newChild makes the child agent over a new session (a fork of the
// parent's when asked) and the subagent.start that links it.
func (a *Agent) newChild(ctx context.Context, r *runState, req *SpawnRequest, name string, depth int, limits Limits) (*Agent, *session.SubagentStart, error) {
	start := &session.SubagentStart{Name: name, Depth: depth, Fork: req.Fork, CallID: req.CallID}
	sid, err := a.childSession(ctx, r, start)
	if err != nil {
		return nil, nil, err
	}
	tools, borrowed, err := a.childTools(req, depth >= a.opts.Subagents.resolved().MaxDepth)
	if err != nil {
		_ = a.store.Delete(context.WithoutCancel(ctx), sid)
		return nil, nil, err
	}
	runID := session.RunID(a.opts.NewID())
	start.ChildSession, start.ChildRun = sid, runID
	co := a.childOptions(req, name, sid, tools, limits, runID)
	child, err := New(co)
	if err != nil {
		_ = a.store.Delete(context.WithoutCancel(ctx), sid)
		return nil, nil, fmt.Errorf("agent: spawn %s: %w", name, err)
	}
	child.kin.depth = depth
	child.kin.borrowed = borrowed
	child.kin.inherited = append(slices.Clip(a.kin.inherited), a.opts.Enforce)
	child.kin.ups = append(slices.Clip(a.kin.ups), a.bus)
	child.w.parent, child.w.up = r.id, child.kin.ups
	return child, start, nil
}

// childSession creates the child's session: empty, or the parent's log up
// to the spawning step, balanced.
func (a *Agent) childSession(ctx context.Context, r *runState, start *session.SubagentStart) (session.ID, error) {
	if !start.Fork {
		sid, err := a.store.Create(ctx, &session.CreateRequest{Parent: r.sid})
		if err != nil {
			return "", fmt.Errorf("agent: spawn %s: create its session: %w", start.Name, err)
		}
		return sid, nil
	}
	cut, err := a.forkPoint(ctx, r.sid)
	if err != nil {
		return "", err
	}
	sid, err := session.Fork(ctx, a.store, r.sid, cut)
	if err != nil {
		return "", fmt.Errorf("agent: spawn %s: %w", start.Name, err)
	}
	start.ForkSeq = cut
	return sid, nil
}

// forkPoint is the last seq before the spawning step's step.start.
func (a *Agent) forkPoint(ctx context.Context, sid session.ID) (int64, error) {
	var cut, last int64
	for ev, err := range a.store.Events(ctx, sid, 0) {
		if err != nil {
			return 0, fmt.Errorf("agent: fork %s: %w", sid, err)
		}
		if _, ok := ev.Data.(*session.StepStart); ok {
			cut = ev.Seq - 1
		}
		last = ev.Seq
	}
	if cut == 0 {
		cut = last
	}
	return cut, nil
}

// childTools picks the parent's tools the child may call, by name, plus
// its own; borrowed names the parent's. A fresh child at the depth limit
// is not offered the spawn tool, which could only refuse.
func (a *Agent) childTools(req *SpawnRequest, deepest bool) ([]tool.Tool, map[string]bool, error) {
	tb := a.tb.Load()
	names := req.Tools
	if names == nil || req.Fork {
		names = tb.names
	}
	var out []tool.Tool
	borrowed := map[string]bool{}
	for _, n := range names {
		e := tb.byName[n]
		if e == nil {
			return nil, nil, fmt.Errorf("%w: no tool named %q to give the child; the parent has: %s", ErrSpawnRefused, n, strings.Join(tb.names, ", "))
		}
		t := e.t
		if _, spawns := tool.As[*spawnTool](t); spawns && deepest && !req.Fork {
			continue
		}
		if a.opts.DryRun {
			t = tool.Unwrap(t) // the child wraps it again
		}
		out = append(out, t)
		borrowed[n] = true
	}
	return append(out, req.OwnTools...), borrowed, nil
}

// childOptions are the child's options: the parent's seams, clock and
// approver, the request's model, prompt and limits.
func (a *Agent) childOptions(req *SpawnRequest, name string, sid session.ID, tools []tool.Tool, limits Limits, runID session.RunID) *Options {
	p := &a.opts
	co := &Options{Name: name, Store: a.store, Session: sid, Tools: tools, Hooks: req.Hooks,
		Approver: p.Approver, DryRun: p.DryRun, State: p.State, Limits: limits, Retry: &a.retry,
		Parallel: p.Parallel, ToolGrace: p.ToolGrace, SpillDir: p.SpillDir, Cost: p.Cost,
		Now: p.Now, Sleep: p.Sleep, Jitter: p.Jitter, Logger: a.log.With("subagent", name),
		Subagents: p.Subagents, ObserverBuffer: p.ObserverBuffer, StrictPairing: p.StrictPairing}
	var first atomic.Bool
	co.NewID = func() string {
		if first.CompareAndSwap(false, true) {
			return string(runID)
		}
		return p.NewID()
	}
	co.System = req.System
	if req.Fork || co.System == "" {
		co.System, co.SystemSections = p.System, p.SystemSections
	}
	if t := req.Target; t != nil {
		co.Model, co.Provider, co.ModelName = t.Client, t.Provider, t.Model
	} else {
		t0 := a.targets[0]
		co.Model, co.Provider, co.ModelName, co.Fallbacks = t0.Client, t0.Provider, t0.Model, a.targets[1:]
		co.ContextWindow, co.OutputReserve, co.Compaction = p.ContextWindow, p.OutputReserve, p.Compaction
	}
	if p.Request != nil {
		tmpl := a.template
		co.Request = &tmpl
	}
	co.PromptCache = p.PromptCache
	return co
}

// endOf is the subagent.end of a child's run.
func endOf(start *session.SubagentStart, res *Result, err error) *session.SubagentEnd {
	e := &session.SubagentEnd{ChildSession: start.ChildSession, ChildRun: start.ChildRun, Name: start.Name,
		Depth: start.Depth, CallID: start.CallID, Reason: session.EndError}
	if err != nil {
		e.Message = err.Error()
	}
	if res == nil {
		return e
	}
	e.Reason, e.Cause, e.Steps = res.Reason, res.Cause, res.Steps
	e.Answer = res.Text
	if len(res.Output) > 0 {
		e.Answer = string(res.Output)
	}
	e.Usage, e.Cost = res.Total.Usage, res.Total.Cost
	e.ByModel = make(map[string]session.SubagentUsage, len(res.Total.ByModel))
	for k, v := range res.Total.ByModel {
		e.ByModel[k] = session.SubagentUsage(v)
	}
	return e
}

// recordChild writes a child's end, and the resources it handed over, to
// the parent's log: in the spawning run while it lasts, else in a turn
// of its own.
func (a *Agent) recordChild(r *runState, end *session.SubagentEnd, left []io.Closer) {
	ps := []session.Payload{end}
	if len(left) > 0 {
		a.kin.adopt(left...)
		h := &session.SubagentHandoff{ChildSession: end.ChildSession, Name: end.Name}
		for _, c := range left {
			h.Resources = append(h.Resources, resourceName(c))
		}
		ps = append(ps, h)
	}
	a.recordIn(r.wctx, r, session.TriggerSubagent, ps...)
}

func resourceName(c io.Closer) string {
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", c)
}
