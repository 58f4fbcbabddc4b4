package sqlite

import (
	"context"

	"github.com/reinhq/rein/session"
)

// appendTx commits events after last in one immediate transaction run by
// the statements prepared on the write connection: BEGIN IMMEDIATE, an
// insert per event, the session row's update, COMMIT. It takes no
// database/sql transaction, whose watcher goroutine and per-statement
// copies would cost every batch. s.wmu is held.
func (s *Store) appendTx(ctx context.Context, id session.ID, last int64, events []session.Event) error {
	if _, err := s.begin.ExecContext(ctx); err != nil {
		return err
	}
	err := insertWith(ctx, s.insEv, s.updSes, id, last, events)
	if err == nil {
		_, err = s.end.ExecContext(ctx)
	}
	if err != nil {
		// Whatever failed, leave no transaction open on the connection.
		s.w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}
