package agent

import (
	"sync"

	"github.com/reinhq/rein/llm"
)

// charges are what completions made on a run's behalf outside its steps
// cost — its decisions, an MCP server's sampling answered with its model.
// They are added from the goroutines of tools and hosts.
type charges struct {
	mu      sync.Mutex
	usage   llm.Usage
	cost    float64
	byModel map[string]ModelUsage
}

func (c *charges) add(model string, u llm.Usage, cost float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usage.Add(u)
	c.cost += cost
	if c.byModel == nil {
		c.byModel = map[string]ModelUsage{}
	}
	m := c.byModel[model]
	m.Usage.Add(u)
	m.Cost += cost
	c.byModel[model] = m
}

func (c *charges) spent() (llm.Usage, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usage, c.cost
}

// addTo adds the charges to a run's totals.
func (c *charges) addTo(t *Totals) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Usage.Add(c.usage)
	t.Cost += c.cost
	for k, v := range c.byModel {
		m := t.ByModel[k]
		m.Usage.Add(v.Usage)
		m.Cost += v.Cost
		t.ByModel[k] = m
	}
}

// Charge adds to the run in flight the usage and cost of a completion
// made on its behalf outside its own steps — an MCP server's sampling
// request answered with the run's model: the run's budgets
// (Limits.MaxTokens, Limits.MaxCost) count it from the next step
// boundary, and its Result.Total includes it under model. It reports
// false, charging nothing, when no run is in flight. Decide charges its
// run itself.
func (a *Agent) Charge(model string, u llm.Usage, cost float64) bool {
	a.mu.Lock()
	c := a.ctl
	a.mu.Unlock()
	if c == nil {
		return false
	}
	c.charged.add(model, u, cost)
	return true
}
