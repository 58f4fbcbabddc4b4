package dbos

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	transact "github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/durable"
)

// Bounds of Submit's tries when it cannot connect to the system database.
const (
	submitRetryFor   = time.Minute
	submitRetryFirst = 100 * time.Millisecond
	submitRetryMost  = 5 * time.Second
)

// Submit enqueues req.Turn on its queue (the engine's by default), one
// turn of a session at a time, and returns the turn's workflow id (req.ID,
// or a new one).
//
// When the system database cannot be reached — a connection that could
// not be opened (a burst of submitters on a busy server can find
// connecting slower than DBOS's ten seconds) or one lost on the way —
// Submit tries again, backing off, for up to a minute or until ctx ends.
// Every try carries the same workflow id, so a try whose commit landed
// unseen is not enqueued twice. Every other error is returned at once.
func (e *Engine) Submit(ctx context.Context, req *durable.SubmitRequest) (string, error) {
	if req == nil || req.Turn.Session == "" {
		return "", errors.New("dbos: submit: the turn names no session")
	}
	q := req.Queue
	if q == "" {
		q = e.opts.Queue
	}
	opts := []transact.EnqueueOption{
		transact.WithEnqueueQueuePartitionKey(string(req.Turn.Session)),
		transact.WithEnqueueApplicationVersion(e.opts.Version),
	}
	id := req.ID
	if id == "" {
		id = rand.Text()
	}
	opts = append(opts, transact.WithEnqueueWorkflowID(id))
	giveUp := time.Now().Add(submitRetryFor)
	delay := submitRetryFirst
	for {
		h, err := transact.Enqueue[durable.Outcome](e.client, q, workflowName, req.Turn, opts...)
		if err == nil {
			return h.GetWorkflowID(), nil
		}
		err = fmt.Errorf("dbos: submit to queue %q: %w", q, err)
		if !unreachable(err) || time.Now().Add(delay).After(giveUp) {
			return "", err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("%w (stopped trying again: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, submitRetryMost)
	}
}

// unreachable reports whether err says the system database could not be
// reached: a connection not opened, lost, or shut down by the server.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	var ne net.Error
	switch {
	case errors.As(err, &ce), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return true
	case errors.As(err, &pe):
		// Class 08 is a connection exception; 57P01-57P03 a server
		// shutting down or not yet accepting connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return false
}
