package postgres

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/session"
)

// Hold takes the lease of session id now, as the first Append would: a
// *LeaseError if another live Store holds it, the turns a dead holder
// left open closed (unless Options.KeepOpenTurns), and renewals from
// then on. A host that is about to drive a session calls it first, so
// the lease says at once who drives it, before the first event is ready.
func (s *Store) Hold(ctx context.Context, id session.ID) error {
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.held {
		return nil
	}
	return s.take(ctx, id, st, true)
}

// Release gives up this Store's lease of session id, so that another
// Store may append to it at once rather than when this Store closes. The
// next Append (or Hold) of id in this Store takes the lease again. A
// session this Store does not hold is left alone.
func (s *Store) Release(ctx context.Context, id session.ID) error {
	st, err := s.get(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.held {
		return nil
	}
	s.drop(st)
	if _, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE session = $1 AND owner = $2`, string(id), s.owner); err != nil {
		return s.wrap(fmt.Sprintf("release session %q (the lease expires in %v)", id, s.ttl), err)
	}
	return nil
}

// Holder returns the lease of session id, nil if nobody holds one. Its
// Live field says whether the holder may still append: the lease has not
// expired, the holder's connection is open and, where this process can
// see the holder's pids, its process runs.
func (s *Store) Holder(ctx context.Context, id session.ID) (*Lease, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	l, err := s.leaseOf(ctx, s.pool, id)
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("read the lease of session %q", id), err)
	}
	if l != nil {
		l.Live = s.alive(l)
	}
	return l, nil
}

// Held reports whether another live Store holds the lease of session id
// (see Holder): a host that finds a session's work abandoned takes it
// over only when it is not held.
func (s *Store) Held(ctx context.Context, id session.ID) (bool, error) {
	l, err := s.Holder(ctx, id)
	if err != nil || l == nil {
		return false, err
	}
	return l.Live && l.Owner != s.owner, nil
}
