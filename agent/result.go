package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// TTFT is the time from the run's start to the first streamed chunk.
	TTFT     time.Duration
	Duration time.Duration
	// Events are the events the run wrote, in seq order.
	Events []session.Event
	// ObserverDrops counts the events slow observers lost during the run
	// (see Agent.ObserverStats for who).
	ObserverDrops int64
}

func (r *runState) result(reason session.EndReason, cause string) *Result {
	res := &Result{
		Session: r.a.sid, Turn: r.turn, Run: r.id, Reason: reason, Cause: cause,
		Output: r.output, Steps: r.steps, Usage: r.usage, Cost: r.cost,
		ByModel: make(map[string]ModelUsage, len(r.byModel)), TTFT: r.ttft,
		Duration: r.a.opts.Now().Sub(r.started),
	}
	n := 0
	for _, c := range r.events {
		n += len(c)
	}
	res.Events = make([]session.Event, 0, n)
	for _, c := range r.events {
		res.Events = append(res.Events, c...)
	}
	if r.hasFinal {
		m := r.final
		res.Message, res.Text = &m, m.Text()
	}
	for k, v := range r.byModel {
		res.ByModel[k] = *v
	}
	return res
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
