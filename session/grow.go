package session

import "iter"

// push appends v to s, doubling the capacity when it is full. append
// grows a long slice by about a quarter, so a log of n events would copy
// and allocate its entries a dozen times over; doubling keeps that to
// twice, which matters for what grows with every step (the in-memory
// store's batches, the derived view).
func push[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		next := make([]T, len(s), max(2*cap(s), 8))
		copy(next, s)
		s = next
	}
	return append(s, v)
}

// Collect reads events to their end and returns them, or those before
// the first error and the error. It grows its slice by doubling, so that
// reading a long log copies its events about once, not a dozen times.
func Collect(events iter.Seq2[Event, error]) ([]Event, error) {
	var out []Event
	for e, err := range events {
		if err != nil {
			return out, err
		}
		out = push(out, e)
	}
	return out, nil
}
