package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
)

// eventRows is a read of eventsQuery's rows.
type eventRows interface {
	// next reads the next row; row is valid until the following call.
	// It returns false at the end of the rows or on an error.
	next() (seq, t int64, row []byte, ok bool)
	// err is the error that ended the rows, nil at their end.
	err() error
}

// driverRows reads straight from the driver's rows: database/sql locks
// the connection and converts every value of every row again, which was
// a fifth of a long read. As database/sql's rows do, they end with the
// context's error once it is done.
type driverRows struct {
	ctx  context.Context
	rows driver.Rows
	dest [3]driver.Value
	e    error
}

func (r *driverRows) next() (int64, int64, []byte, bool) {
	select {
	case <-r.ctx.Done():
		r.e = r.ctx.Err()
		return 0, 0, nil, false
	default:
	}
	if err := r.rows.Next(r.dest[:]); err != nil {
		if err != io.EOF {
			r.e = err
		}
		return 0, 0, nil, false
	}
	key, ok1 := r.dest[0].(int64)
	t, ok2 := r.dest[1].(int64)
	row, ok3 := r.dest[2].([]byte)
	if !ok1 || !ok2 || !ok3 {
		r.e = fmt.Errorf("a row of unexpected types %T, %T, %T", r.dest[0], r.dest[1], r.dest[2])
		return 0, 0, nil, false
	}
	return key & maxSeq, t, row, true
}

func (r *driverRows) err() error { return r.e }
