// Package opened keeps, for a session store, the state of each session
// the store has opened and whether the store is closed: the registry
// every store holds in the same way.
package opened

import (
	"sync"

	"github.com/reinhq/rein/session"
)

// Sessions holds a state of type S for each session a store has opened.
// The zero value is ready to use; it is safe for concurrent use.
type Sessions[S any] struct {
	mu     sync.Mutex
	closed bool
	m      map[session.ID]*S
}

// Get returns the state of id, made by newState on first use. After
// Close it returns session.ErrClosed.
func (o *Sessions[S]) Get(id session.ID, newState func() *S) (*S, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, session.ErrClosed
	}
	st := o.m[id]
	if st == nil {
		st = newState()
		if o.m == nil {
			o.m = map[session.ID]*S{}
		}
		o.m[id] = st
	}
	return st, nil
}

// Peek returns the state of id, or nil if it has none; it makes none.
func (o *Sessions[S]) Peek(id session.ID) *S {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[id]
}

// Closed reports whether Close was called.
func (o *Sessions[S]) Closed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// Forget drops the state of id if it is still st, as after the session
// is deleted.
func (o *Sessions[S]) Forget(id session.ID, st *S) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m[id] == st {
		delete(o.m, id)
	}
}

// Close marks the store closed and returns the states it held. first is
// false, and states nil, if it was closed already.
func (o *Sessions[S]) Close() (states map[session.ID]*S, first bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, false
	}
	o.closed = true
	states, o.m = o.m, nil
	return states, true
}
