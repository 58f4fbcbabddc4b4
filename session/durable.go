package session

import (
	"slices"

	"github.com/reinhq/rein/llm"
)

// Event types of durable turns: a turn that can be stopped (suspended, or
// cut short by a crash) and continued later, in the same process or
// another one, from its last completed record.
const (
	// TypeTurnPin records what a durable turn was started with, so that a
	// later resume can refuse to continue it with other tools, another
	// model or another version.
	TypeTurnPin = "turn.pin"
	// TypeTurnSuspend records that a run stopped its turn at a safe point
	// to be resumed; the turn stays open on the log.
	TypeTurnSuspend = "turn.suspend"
	// TypeTurnResume records that a run continues a turn that stopped, and
	// what it did with the calls that were in flight.
	TypeTurnResume = "turn.resume"
)

// EndSuspended is the end reason a run reports (agent.Result) when it
// suspended its turn. It is never written in a turn.end: a suspended turn
// stays open, closed later by the run that resumes it or, when none does,
// by the repair of the next one.
const EndSuspended EndReason = "suspended"

// TurnPin records what a durable turn was started with: the primary model,
// the tool set (its names and a hash of their definitions) and the version
// of the program that ran it. It follows the turn.start.
type TurnPin struct {
	Provider  string   `json:"provider,omitempty"`
	Model     string   `json:"model"`
	Tools     []string `json:"tools,omitempty"` // names in the order offered
	ToolsHash string   `json:"tools_hash,omitempty"`
	Version   string   `json:"version,omitempty"`
}

// TurnSuspend records a suspended turn: Step is the step it stopped in or
// after (0 before the first), Pending the calls of that step that have no
// result yet (never started, or cut short after the grace).
type TurnSuspend struct {
	Step    int          `json:"step"`
	Pending []llm.CallID `json:"pending,omitempty"`
	Reason  string       `json:"reason,omitempty"`
}

// TurnResume records a run that continues a turn. After is the seq of the
// last record it continues from; Suspended says the turn was suspended
// rather than cut short. A turn left open continues in place; a turn a
// crash's repair closed (turn.end interrupted) continues in a new turn
// (trigger resume) that names it in Continues, and whose first step
// calls again, as the harness's own message (provenance rein/resume,
// new call ids), the calls that are to run. Of the calls that had no
// real result, Rerun started before and run again (their tools may be
// re-run), Interrupted started before and are answered as interrupted
// (their tools may not be re-run), and Started never started and run now.
type TurnResume struct {
	Step        int          `json:"step"`
	After       int64        `json:"after"`
	Suspended   bool         `json:"suspended,omitempty"`
	Continues   TurnID       `json:"continues,omitempty"`
	Rerun       []llm.CallID `json:"rerun,omitempty"`
	Interrupted []llm.CallID `json:"interrupted,omitempty"`
	Started     []llm.CallID `json:"started,omitempty"`
}

// EventType returns TypeTurnPin.
func (*TurnPin) EventType() string { return TypeTurnPin }

// EventType returns TypeTurnSuspend.
func (*TurnSuspend) EventType() string { return TypeTurnSuspend }

// EventType returns TypeTurnResume.
func (*TurnResume) EventType() string { return TypeTurnResume }

func (*TurnPin) isPayload()     {}
func (*TurnSuspend) isPayload() {}
func (*TurnResume) isPayload()  {}

// cloneDurable deep-copies a durable-turn payload; ok is false for others.
func cloneDurable(p Payload) (Payload, bool) {
	switch p := p.(type) {
	case *TurnPin:
		c := *p
		c.Tools = slices.Clone(p.Tools)
		return &c, true
	case *TurnSuspend:
		c := *p
		c.Pending = slices.Clone(p.Pending)
		return &c, true
	case *TurnResume:
		c := *p
		c.Rerun = slices.Clone(p.Rerun)
		c.Interrupted = slices.Clone(p.Interrupted)
		c.Started = slices.Clone(p.Started)
		return &c, true
	}
	return nil, false
}

// newDurablePayload returns an empty durable-turn payload of typ, or nil.
func newDurablePayload(typ string) Payload {
	switch typ {
	case TypeTurnPin:
		return new(TurnPin)
	case TypeTurnSuspend:
		return new(TurnSuspend)
	case TypeTurnResume:
		return new(TurnResume)
	}
	return nil
}
