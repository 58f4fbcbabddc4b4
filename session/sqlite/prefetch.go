package sqlite

// A long read steps the statement on a goroutine of its own and decodes
// on the reader's: SQLite's stepping and the driver's copying of each
// row take about as long as decoding and yielding the events, so on a
// machine with two cores a long read takes about half the time. A short
// read (a tail, a resumed turn) does not pay for the goroutine.
const (
	sequentialRows = 1024 // rows read before the stepping moves to a goroutine
	batchRows      = 256  // rows handed over at a time
	batches        = 3    // one being filled, one waiting, one being decoded
)

// rowBatch is rows of eventsQuery copied out of the driver's buffers.
type rowBatch struct {
	seq, t []int64
	ends   []int // where each row's bytes end in data
	data   []byte
	end    bool  // the statement has no more rows
	err    error // the statement failed after the rows before
}

func (b *rowBatch) add(seq, t int64, row []byte) {
	b.seq, b.t = append(b.seq, seq), append(b.t, t)
	b.data = append(b.data, row...)
	b.ends = append(b.ends, len(b.data))
}

func (b *rowBatch) row(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.data[start:b.ends[i]]
}

func (b *rowBatch) reset() {
	b.seq, b.t, b.ends, b.data = b.seq[:0], b.t[:0], b.ends[:0], b.data[:0]
}

// prefetch reads the rest of rows on a goroutine, in batches, and calls
// emit with each row in order on the caller's goroutine; emit returns
// false to stop. Only the goroutine touches rows until prefetch returns,
// which it does after the goroutine has ended, so the caller may then
// close rows. A row's bytes are valid only during its emit.
func prefetch(rows eventRows, emit func(seq, t int64, row []byte) bool) error {
	full := make(chan *rowBatch, batches)
	free := make(chan *rowBatch, batches)
	for range batches {
		free <- new(rowBatch)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(full)
		for {
			var b *rowBatch
			select {
			case b = <-free:
			case <-stop:
				return
			}
			fill(b, rows)
			select {
			case full <- b:
			case <-stop:
				return
			}
			if b.end || b.err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	for b := range full {
		for i := range b.seq {
			if !emit(b.seq[i], b.t[i], b.row(i)) {
				return nil
			}
		}
		if b.err != nil {
			return b.err
		}
		free <- b // never blocks: there are only so many batches
	}
	return nil
}

// fill reads up to batchRows rows into b.
func fill(b *rowBatch, rows eventRows) {
	b.reset()
	for len(b.seq) < batchRows {
		seq, t, row, ok := rows.next()
		if !ok {
			b.end, b.err = true, rows.err()
			return
		}
		b.add(seq, t, row)
	}
}
