package agent

import (
	"maps"
	"sync"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// ChildUsage is what one child run cost its parent, the child's own
// children included. It is built from the subagent.end event the parent's
// log holds, so a summary of that log alone has it too.
type ChildUsage struct {
	Session session.ID            `json:"session"`
	Run     session.RunID         `json:"run"`
	Name    string                `json:"name,omitempty"`
	Depth   int                   `json:"depth"`
	Reason  session.EndReason     `json:"reason"`
	Steps   int                   `json:"steps"`
	Usage   llm.Usage             `json:"usage"`
	Cost    float64               `json:"cost,omitempty"`
	ByModel map[string]ModelUsage `json:"by_model,omitempty"`
}

// Totals are usage and cost with every child's included, by model.
type Totals struct {
	Usage   llm.Usage             `json:"usage"`
	Cost    float64               `json:"cost,omitempty"`
	ByModel map[string]ModelUsage `json:"by_model,omitempty"`
}

func childUsageOf(e *session.SubagentEnd) ChildUsage {
	c := ChildUsage{Session: e.ChildSession, Run: e.ChildRun, Name: e.Name, Depth: e.Depth, Reason: e.Reason,
		Steps: e.Steps, Usage: e.Usage, Cost: e.Cost, ByModel: make(map[string]ModelUsage, len(e.ByModel))}
	for k, v := range e.ByModel {
		c.ByModel[k] = ModelUsage(v)
	}
	return c
}

// totalOf adds the children to a run's own usage.
func totalOf(u llm.Usage, cost float64, byModel map[string]ModelUsage, kids []ChildUsage) Totals {
	t := Totals{Usage: u, Cost: cost, ByModel: maps.Clone(byModel)}
	if t.ByModel == nil {
		t.ByModel = map[string]ModelUsage{}
	}
	for _, c := range kids {
		t.Usage.Add(c.Usage)
		t.Cost += c.Cost
		for k, v := range c.ByModel {
			m := t.ByModel[k]
			m.Steps += v.Steps
			m.Usage.Add(v.Usage)
			m.Cost += v.Cost
			t.ByModel[k] = m
		}
	}
	return t
}

// children are the finished children of a run; the tools that spawn
// them write it from their goroutines.
type children struct {
	mu   sync.Mutex
	done []ChildUsage
}

func (c *children) add(u ChildUsage) {
	c.mu.Lock()
	c.done = append(c.done, u)
	c.mu.Unlock()
}

func (c *children) list() []ChildUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ChildUsage(nil), c.done...)
}

// spent is what the finished children used.
func (c *children) spent() (llm.Usage, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var u llm.Usage
	var cost float64
	for _, k := range c.done {
		u.Add(k.Usage)
		cost += k.Cost
	}
	return u, cost
}

// spentMeter is the run's meter with its finished children's usage and
// cost, and its charges, added: what the run's budgets are checked against.
func (r *runState) spentMeter() meter {
	m := r.meter
	u, cost := r.kids.spent()
	m.usage.Add(u)
	m.cost += cost
	u, cost = r.ctl.charged.spent()
	m.usage.Add(u)
	m.cost += cost
	return m
}

// Lineage tells how deep an event's agent sits below the main agent (0
// for the main agent, 1 for its children, …) from the event headers
// alone: a child's events carry its parent's run as ParentRun. Feed it
// every event an observer sees, in order; an event whose parent run it
// never saw counts from that parent as if it were the main agent. It is
// safe for concurrent use.
type Lineage struct {
	mu     sync.Mutex
	parent map[session.RunID]session.RunID
}

// Depth notes ev's run and returns its depth.
func (l *Lineage) Depth(ev session.Event) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.parent == nil {
		l.parent = map[session.RunID]session.RunID{}
	}
	if ev.Run != "" && ev.ParentRun != "" {
		l.parent[ev.Run] = ev.ParentRun
	}
	d := 0
	for p := ev.ParentRun; p != "" && d < 1000; p = l.parent[p] {
		d++
	}
	return d
}
