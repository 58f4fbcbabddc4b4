package session

import "fmt"

// Durability says when a durable Store forces appended events to stable
// storage. Each store documents how it meets each setting; the promise is
// the same for all of them: a crash of the process never loses an event
// whose Append returned, and the setting only decides what a crash of the
// machine may lose.
type Durability int

const (
	// DurabilityStep syncs an append that ends a step or a turn (holds a
	// step.end or turn.end event). A crash of the machine may lose the
	// events of the step in progress, never a finished step. It is the
	// zero value and the default.
	DurabilityStep Durability = iota
	// DurabilityAlways syncs every append.
	DurabilityAlways
	// DurabilityNever never syncs: a crash of the process loses nothing,
	// a crash of the machine may lose what the OS had not yet written.
	DurabilityNever
)

// String returns "step", "always" or "never".
func (d Durability) String() string {
	switch d {
	case DurabilityStep:
		return "step"
	case DurabilityAlways:
		return "always"
	case DurabilityNever:
		return "never"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// Syncs reports whether an append of events must reach stable storage
// under d: always for DurabilityAlways, never for DurabilityNever, and for
// DurabilityStep when the batch holds a step.end or turn.end event.
func (d Durability) Syncs(events []Event) bool {
	switch d {
	case DurabilityAlways:
		return true
	case DurabilityNever:
		return false
	}
	for i := range events {
		switch events[i].Data.(type) {
		case *StepEnd, *TurnEnd:
			return true
		}
	}
	return false
}
