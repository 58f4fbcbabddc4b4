package sqlite

import "github.com/reinhq/rein/session"

// Subscribe implements session.Notifier for appends made through this
// Store; appends by other processes are seen by polling (session.Follow
// does both). After Close the channel never fires.
func (s *Store) Subscribe(id session.ID) (<-chan struct{}, func()) {
	return s.subs.Subscribe(id)
}

var _ session.Notifier = (*Store)(nil)
