package hook

import (
	"context"

	"github.com/reinhq/rein/session"
)

type noteKey struct{}

// WithNotes returns a context whose handlers can record decisions of
// their own with Note; record is called for each. The agent installs it
// on the context it passes to every handler.
func WithNotes(ctx context.Context, record func(*session.HookDecision)) context.Context {
	return context.WithValue(ctx, noteKey{}, record)
}

// Note records d on the session log of the run that called the handler
// holding ctx — for what a typed decision cannot say: which program ran,
// its exit code and duration, or a failure that did not block. It reports
// false when no run is listening (the handler was called outside a loop).
// Note may be called from several goroutines.
func Note(ctx context.Context, d *session.HookDecision) bool {
	record, _ := ctx.Value(noteKey{}).(func(*session.HookDecision))
	if record == nil || d == nil {
		return false
	}
	record(d)
	return true
}
