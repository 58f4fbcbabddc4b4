package session

import (
	"maps"

	"github.com/reinhq/rein/llm"
)

// Event types of subagents: written to the parent's log around a child's
// run. The child's own events are in the child's session and carry the
// parent's run as ParentRun.
const (
	TypeSubagentQueued  = "subagent.queued"
	TypeSubagentStart   = "subagent.start"
	TypeSubagentEnd     = "subagent.end"
	TypeSubagentHandoff = "subagent.handoff"
)

// TriggerSubagent opens a turn of its own that records the end of a child
// that outlived the run that spawned it.
const TriggerSubagent = "subagent"

// SubagentQueued records a spawn that waits for a free slot: Running
// children of the same parent already use every slot.
type SubagentQueued struct {
	CallID  llm.CallID `json:"call_id,omitempty"`
	Name    string     `json:"name,omitempty"`
	Running int        `json:"running"`
}

// SubagentStart links a child to the parent's log: the child's session and
// run, its name, its depth below the root (1 for a child of the main
// agent), whether it forked the parent's history (ForkSeq is the last seq
// of the parent's log the fork holds), and the spawning call.
type SubagentStart struct {
	ChildSession ID         `json:"child_session"`
	ChildRun     RunID      `json:"child_run"`
	Name         string     `json:"name,omitempty"`
	Depth        int        `json:"depth"`
	Fork         bool       `json:"fork,omitempty"`
	ForkSeq      int64      `json:"fork_seq,omitempty"`
	CallID       llm.CallID `json:"call_id,omitempty"`
}

// SubagentUsage is the usage and cost of one model within a child's run
// (its own children included).
type SubagentUsage struct {
	Steps int       `json:"steps"`
	Usage llm.Usage `json:"usage"`
	Cost  float64   `json:"cost,omitempty"`
}

// SubagentEnd records how a child's run ended: its answer (the final
// text, or the validated JSON of a structured answer), end reason and
// cause, and its usage and cost, its own children's included, in total
// and by model.
type SubagentEnd struct {
	ChildSession ID                       `json:"child_session"`
	ChildRun     RunID                    `json:"child_run"`
	Name         string                   `json:"name,omitempty"`
	Depth        int                      `json:"depth"`
	CallID       llm.CallID               `json:"call_id,omitempty"`
	Reason       EndReason                `json:"reason"`
	Cause        string                   `json:"cause,omitempty"`
	Message      string                   `json:"message,omitempty"` // what failed, for an error
	Answer       string                   `json:"answer,omitempty"`
	Steps        int                      `json:"steps"`
	Usage        llm.Usage                `json:"usage,omitzero"`
	Cost         float64                  `json:"cost,omitempty"`
	ByModel      map[string]SubagentUsage `json:"by_model,omitempty"`
}

// SubagentHandoff records resources a finished child left running (a
// shell's background tasks) that its parent took over: they live until the
// parent closes. Resources names them.
type SubagentHandoff struct {
	ChildSession ID       `json:"child_session"`
	Name         string   `json:"name,omitempty"`
	Resources    []string `json:"resources"`
}

// EventType returns TypeSubagentQueued.
func (*SubagentQueued) EventType() string { return TypeSubagentQueued }

// EventType returns TypeSubagentStart.
func (*SubagentStart) EventType() string { return TypeSubagentStart }

// EventType returns TypeSubagentEnd.
func (*SubagentEnd) EventType() string { return TypeSubagentEnd }

// EventType returns TypeSubagentHandoff.
func (*SubagentHandoff) EventType() string { return TypeSubagentHandoff }

func (*SubagentQueued) isPayload()  {}
func (*SubagentStart) isPayload()   {}
func (*SubagentEnd) isPayload()     {}
func (*SubagentHandoff) isPayload() {}

// cloneSubagent deep-copies a subagent payload; ok is false for others.
func cloneSubagent(p Payload) (Payload, bool) {
	switch p := p.(type) {
	case *SubagentQueued:
		c := *p
		return &c, true
	case *SubagentStart:
		c := *p
		return &c, true
	case *SubagentEnd:
		c := *p
		c.ByModel = maps.Clone(p.ByModel)
		return &c, true
	case *SubagentHandoff:
		c := *p
		c.Resources = append([]string(nil), p.Resources...)
		return &c, true
	}
	return nil, false
}

// newSubagentPayload returns an empty subagent payload of typ, or nil.
func newSubagentPayload(typ string) Payload {
	switch typ {
	case TypeSubagentQueued:
		return new(SubagentQueued)
	case TypeSubagentStart:
		return new(SubagentStart)
	case TypeSubagentEnd:
		return new(SubagentEnd)
	case TypeSubagentHandoff:
		return new(SubagentHandoff)
	}
	return nil
}
