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

// chunked is a list that grows a chunk at a time and never moves what it
// holds: for what is only appended to and walked, such as the events a
// view keeps for a rebuild, it spares the copies a doubling slice makes.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const chunkLen = 512

// add appends v and returns where it is kept.
func (c *chunked[T]) add(v T) *T {
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == chunkLen {
		c.chunks = append(c.chunks, make([]T, 0, chunkLen))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, v)
	c.n++
	return &(*last)[len(*last)-1]
}

// len is the number of values held.
func (c *chunked[T]) len() int { return c.n }

// all yields each value's index and place, in order.
func (c *chunked[T]) all() iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		i := 0
		for _, ch := range c.chunks {
			for j := range ch {
				if !yield(i, &ch[j]) {
					return
				}
				i++
			}
		}
	}
}
