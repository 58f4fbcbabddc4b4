package jsonl

import (
	"time"

	"github.com/reinhq/rein/session"
)

// repairTail returns the events that close an open tail turn; tail is
// every event after the last turn.end.
func repairTail(tail []session.Event, now time.Time) []session.Event {
	return session.RepairEvents(tail, now)
}
