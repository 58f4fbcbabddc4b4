package session

import (
	"slices"

	"github.com/reinhq/rein/llm"
)

// TypeDecision is the event type of a typed decision asked of a model.
const TypeDecision = "decision"

// TriggerDecide opens a turn of its own that records a decision asked
// while the agent was idle.
const TriggerDecide = "decide"

// Decision records one typed decision: what was asked (Kind is
// "probability", "choice" or "score"; Options name the choices, Min and
// Max bound a score), the validated answer (Value for a probability or a
// score, Choice for a choice) and the model's short reason, or Error when
// no valid answer came; the model asked, how many requests it took, and
// their usage and cost. CallID is the tool call that asked, if any.
type Decision struct {
	Kind     string     `json:"kind"`
	Question string     `json:"question"`
	Options  []string   `json:"options,omitempty"`
	Min      float64    `json:"min,omitempty"`
	Max      float64    `json:"max,omitempty"`
	Value    float64    `json:"value,omitempty"`
	Choice   string     `json:"choice,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Error    string     `json:"error,omitempty"`
	Attempts int        `json:"attempts"`
	Provider string     `json:"provider,omitempty"`
	Model    string     `json:"model,omitempty"`
	Usage    llm.Usage  `json:"usage,omitzero"`
	Cost     float64    `json:"cost,omitempty"`
	CallID   llm.CallID `json:"call_id,omitempty"`
}

// EventType returns TypeDecision.
func (*Decision) EventType() string { return TypeDecision }

func (*Decision) isPayload() {}

func cloneDecision(p *Decision) *Decision {
	c := *p
	c.Options = slices.Clone(p.Options)
	return &c
}
