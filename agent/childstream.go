package agent

import "github.com/reinhq/rein/session"

// call gives ev to the stream's consumer, one event at a time whichever
// goroutine gives it (the run's own, or a subagent's); false once the
// consumer went away.
func (s *sink) call(ev session.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone.Load() {
		return false
	}
	if !s.fn(ev) {
		s.gone.Store(true)
		return false
	}
	return true
}

// forward is the sink of a child run when the run's stream takes its
// children's events (RunRequest.Children), nil otherwise. A consumer
// that goes away on a child's event cancels this run, which cancels the
// child; the child itself never stops for it.
func (r *runState) forward() func(session.Event) bool {
	if !r.sink.children || !r.sink.wants() {
		return nil
	}
	return func(ev session.Event) bool {
		if r.sink.wants() && !r.sink.call(ev) {
			r.a.Cancel("stream-closed")
		}
		return true
	}
}

// close ends the consumer's stream: once the run is over, a child that
// outlives it gives nothing more.
func (s *sink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone.Store(true)
}
