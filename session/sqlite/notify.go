package sqlite

import "github.com/reinhq/rein/session"

// Subscribe implements session.Notifier for appends made through this
// Store; appends by other processes are seen by polling (session.Follow
// does both). After Close the channel never fires.
func (s *Store) Subscribe(id session.ID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ch, func() {}
	}
	if s.subs == nil {
		s.subs = map[session.ID]map[chan struct{}]struct{}{}
	}
	if s.subs[id] == nil {
		s.subs[id] = map[chan struct{}]struct{}{}
	}
	s.subs[id][ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		delete(s.subs[id], ch)
		if len(s.subs[id]) == 0 {
			delete(s.subs, id)
		}
		s.mu.Unlock()
	}
}

// notify wakes the subscribers of id.
func (s *Store) notify(id session.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

var _ session.Notifier = (*Store)(nil)
