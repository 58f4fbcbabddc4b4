package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// SubagentOptions are the limits on the children an agent spawns. A zero
// field takes its default.
type SubagentOptions struct {
	// MaxDepth is how deep children may nest: 1 lets the main agent spawn
	// children that may not spawn their own. Zero means 3.
	MaxDepth int
	// MaxConcurrent caps the children one parent runs at once. Over the
	// cap, a child of the main agent waits for a slot (recorded as
	// subagent.queued); a deeper one is refused. Zero means 4.
	MaxConcurrent int
}

func (o *SubagentOptions) resolved() SubagentOptions {
	var r SubagentOptions
	if o != nil {
		r = *o
	}
	if r.MaxDepth <= 0 {
		r.MaxDepth = 3
	}
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = 4
	}
	return r
}

// kin is an agent's place in a tree of subagents: its depth, the
// enforcement it inherits, the slots of its children and the resources
// its finished children handed to it.
type kin struct {
	depth     int             // 0 for a main agent
	inherited []*hook.Set     // the ancestors' Enforce sets, the root's first
	ups       []*hook.Bus     // the ancestors' buses
	borrowed  map[string]bool // tools that belong to the parent

	mu      sync.Mutex
	slots   chan struct{} // made at the first spawn
	adopted []io.Closer
}

// chainSets are the handler sets of a run, in order: the ancestors'
// enforcement, the agent's own, the run's, the guards.
func (a *Agent) chainSets(run, guards *hook.Set) []*hook.Set {
	sets := make([]*hook.Set, 0, len(a.kin.inherited)+4)
	sets = append(sets, a.kin.inherited...)
	return append(sets, a.opts.Enforce, a.opts.Hooks, run, guards)
}

// observed reports whether anyone observes the agent's events: its own
// observers or an ancestor's.
func (a *Agent) observed() bool {
	if a.bus.Has() {
		return true
	}
	for _, b := range a.kin.ups {
		if b.Has() {
			return true
		}
	}
	return false
}

// ErrSpawnRefused is wrapped by the errors of spawns that the limits
// refuse.
var ErrSpawnRefused = errors.New("agent: spawn refused")

// acquire takes a child slot. A main agent's spawn over the cap waits,
// recorded as queued; a nested one is refused.
func (a *Agent) acquire(ctx context.Context, r *runState, call llm.CallID, name string, max int) (func(), error) {
	k := &a.kin
	k.mu.Lock()
	if k.slots == nil {
		k.slots = make(chan struct{}, max)
	}
	slots := k.slots
	k.mu.Unlock()
	release := func() { <-slots }
	select {
	case slots <- struct{}{}:
		return release, nil
	default:
	}
	if k.depth > 0 {
		return nil, fmt.Errorf("%w: %d subagents of %s are running, the most one subagent may run at once; wait for them or do the work yourself", ErrSpawnRefused, cap(slots), agentLabel(a.opts.Name))
	}
	r.emit(&session.SubagentQueued{CallID: call, Name: name, Running: cap(slots)})
	select {
	case slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("agent: spawn of %s cancelled while it waited for a slot: %w", agentLabel(name), context.Cause(ctx))
	}
}

func agentLabel(name string) string {
	if name == "" {
		return "the main agent"
	}
	return name
}

// adopt takes over resources a finished child left running.
func (k *kin) adopt(cs ...io.Closer) {
	k.mu.Lock()
	k.adopted = append(k.adopted, cs...)
	k.mu.Unlock()
}

// takeAdopted returns, and forgets, what the agent adopted.
func (k *kin) takeAdopted() []io.Closer {
	k.mu.Lock()
	defer k.mu.Unlock()
	cs := k.adopted
	k.adopted = nil
	return cs
}

// closeAdopted closes what the agent adopted, newest first.
func (k *kin) closeAdopted() []error {
	cs := k.takeAdopted()
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: close a resource a subagent handed over: %w", err))
		}
	}
	return errs
}

// runKey finds the run a tool or hook of a run is called within.
type runKey struct{}

func withRun(ctx context.Context, r *runState) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

func runOf(ctx context.Context) *runState {
	r, _ := ctx.Value(runKey{}).(*runState)
	return r
}

// CauseCallCancelled is the cause of a child whose spawn call was
// cancelled (CancelTool on it).
const CauseCallCancelled = "call-cancelled"

// inheritedCause is why a run whose context was cancelled from outside
// ends: a parent's cause when the parent was cancelled, else "parent".
func inheritedCause(ctx context.Context) string {
	cause := context.Cause(ctx)
	var ce *cancelError
	switch {
	case errors.As(cause, &ce):
		return ce.cause
	case errors.Is(cause, errToolCancelled):
		return CauseCallCancelled
	}
	return "parent"
}

// RunningAgent returns the agent whose run ctx belongs to — the ctx a
// tool or hook of that run is called with — or nil. A host's own tool
// uses it to Spawn a child of the agent that called it.
func RunningAgent(ctx context.Context) *Agent {
	if r := runOf(ctx); r != nil {
		return r.a
	}
	return nil
}
