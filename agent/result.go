package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// ModelUsage is the usage and cost of one model within a run.
type ModelUsage struct {
	Steps int       `json:"steps"`
	Usage llm.Usage `json:"usage"`
	Cost  float64   `json:"cost,omitempty"`
}

// Result is how a run ended.
type Result struct {
	Session session.ID
	Turn    session.TurnID
	Run     session.RunID
	// Reason is the turn's end reason; Cause says who cancelled an
	// aborted turn.
	Reason session.EndReason
	Cause  string
	// Message is the last assistant message (nil when none was recorded);
	// Text is its text.
	Message *llm.Message
	Text    string
	// Output is the validated JSON answer of a run that asked for a schema.
	Output json.RawMessage
	// Steps is the number of steps the turn took.
	Steps int
	// Usage and Cost are the run's totals; ByModel splits them by model.
	Usage   llm.Usage
	Cost    float64
	ByModel map[string]ModelUsage
	// Children are the children the run spawned, each with its usage and
	// cost (theirs included); Total is the run's usage and cost with
	// every child's included, and what was charged to the run (its
	// decisions, Agent.Charge), by model.
	Children []ChildUsage
	Total    Totals
	// TTFT is the time from the run's start to the first streamed chunk.
	TTFT     time.Duration
	Duration time.Duration
	// Events are the events the run wrote, in seq order. They share
	// their payloads with the log: treat them as read-only.
	Events []session.Event
	// ObserverDrops counts the events slow observers lost during the run
	// (see Agent.ObserverStats for who).
	ObserverDrops int64
}

func (r *runState) result(reason session.EndReason, cause string) *Result {
	m := &r.meter
	res := &Result{
		Session: r.sid, Turn: r.turn, Run: r.id, Reason: reason, Cause: cause,
		Output: r.output.value, Steps: m.steps, Usage: m.usage, Cost: m.cost,
		ByModel: make(map[string]ModelUsage, len(m.byModel)), TTFT: m.ttft,
		Duration: r.a.opts.Now().Sub(m.started),
	}
	res.Events = r.allEvents()
	if r.hasFinal {
		msg := r.final
		res.Message, res.Text = &msg, msg.Text()
	}
	for k, v := range m.byModel {
		res.ByModel[k] = *v
	}
	res.Children = r.kids.list()
	res.Total = totalOf(res.Usage, res.Cost, res.ByModel, res.Children)
	r.ctl.charged.addTo(&res.Total)
	return res
}

// allEvents returns the run's events in one slice: the kept block itself
// when they are in one (clipped, so an append by the caller cannot write
// into the block), else a copy.
func (r *runState) allEvents() []session.Event {
	if len(r.events) == 1 {
		return slices.Clip(r.events[0])
	}
	n := 0
	for _, c := range r.events {
		n += len(c)
	}
	out := make([]session.Event, 0, n)
	for _, c := range r.events {
		out = append(out, c...)
	}
	return out
}

// meter counts a run's steps, usage and cost.
type meter struct {
	steps      int
	usage      llm.Usage
	cost       float64
	byModel    map[string]*ModelUsage
	started    time.Time
	stepStart  time.Time
	ttft       time.Duration
	firstChunk bool
}

func newMeter(now time.Time) meter {
	return meter{started: now, byModel: map[string]*ModelUsage{}}
}

// chunk notes a streamed chunk: the first gives the run's TTFT.
func (m *meter) chunk(now func() time.Time) {
	if !m.firstChunk {
		m.firstChunk = true
		m.ttft = now().Sub(m.started)
	}
}

// add counts one response's usage, priced with cost (nil prices nothing).
func (m *meter) add(cost func(string, llm.Usage) float64, p *llm.Provenance, u llm.Usage) {
	m.usage.Add(u)
	model := ""
	if p != nil {
		model = p.Model
	}
	mu := m.byModel[model]
	if mu == nil {
		mu = &ModelUsage{}
		m.byModel[model] = mu
	}
	mu.Steps++
	mu.Usage.Add(u)
	if cost != nil {
		c := cost(model, u)
		mu.Cost += c
		m.cost += c
	}
}

// overBudget returns the budget the run has spent, if any.
func (m *meter) overBudget(l Limits) *BudgetError {
	if l.MaxTokens > 0 {
		if used := m.usage.Total(); used >= l.MaxTokens {
			return &BudgetError{Budget: "tokens", Limit: float64(l.MaxTokens), Used: float64(used)}
		}
	}
	if l.MaxCost > 0 && m.cost >= l.MaxCost {
		return &BudgetError{Budget: "cost", Limit: l.MaxCost, Used: m.cost}
	}
	return nil
}

// output is the run's structured-output check.
type output struct {
	schema  json.RawMessage
	v       *validator
	retried bool
	value   json.RawMessage
}

func newOutput(schema json.RawMessage) (output, error) {
	if len(schema) == 0 {
		return output{}, nil
	}
	v, err := newValidator(schema)
	if err != nil {
		return output{}, fmt.Errorf("agent: output schema: %w", err)
	}
	return output{schema: schema, v: v}, nil
}

// check validates a final answer against the schema.
func (o *output) check(answer string) (json.RawMessage, error) {
	out, _, err := o.v.validate(json.RawMessage(trimFence(answer)))
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

// Decode unmarshals the run's structured output into v. Without a schema
// it decodes the final answer's text.
func (r *Result) Decode(v any) error {
	data := []byte(r.Output)
	if len(data) == 0 {
		data = []byte(trimFence(r.Text))
	}
	if len(data) == 0 {
		return fmt.Errorf("agent: decode: the run has no answer to decode (it ended %s)", r.Reason)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("agent: decode answer: %w", err)
	}
	return nil
}

// Summary returns the run's postmortem, built from its events.
func (r *Result) Summary() *RunSummary { return Summarize(r.Events) }

// RunTyped runs req asking for an answer of type T: the schema is
// inferred from T, the answer validated (with one corrective retry) and
// decoded.
func RunTyped[T any](ctx context.Context, a *Agent, req *RunRequest) (T, *Result, error) {
	var zero T
	schema, err := tool.Schema[T]()
	if err != nil {
		return zero, nil, fmt.Errorf("agent: schema of %T: %w", zero, err)
	}
	r := *req
	r.Schema = schema
	res, err := a.Run(ctx, &r)
	if err != nil {
		return zero, res, err
	}
	if res.Reason != session.EndCompleted {
		return zero, res, fmt.Errorf("agent: the turn ended %s before a typed answer", res.Reason)
	}
	var v T
	if err := res.Decode(&v); err != nil {
		return zero, res, errors.Join(ErrInvalidOutput, err)
	}
	return v, res, nil
}
