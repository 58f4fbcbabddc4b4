package dbos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	transact "github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/session"
)

// turn is the turn workflow. Its first step records where the turn
// starts on the log, so that every execution of it finds the same turn;
// its second drives the turn to its end. A worker that dies in the
// second leaves it unrecorded, and whichever execution comes next runs it
// again: durable.Step then resumes the open turn from the log.
func (e *Engine) turn(ctx transact.Context, t durable.Turn) (durable.Outcome, error) {
	after, err := transact.RunAsStep(ctx, func(c context.Context) (int64, error) {
		info, err := e.opts.Store.Info(c, t.Session)
		if err != nil {
			return 0, err
		}
		return info.LastSeq, nil
	}, transact.WithStepName("begin"))
	if err != nil {
		return durable.Outcome{}, fmt.Errorf("dbos: session %s: %w", t.Session, err)
	}
	t.After = after
	return transact.RunAsStep(ctx, func(c context.Context) (durable.Outcome, error) {
		o, err := durable.Step(c, e.opts.Store, &t, e.opts.Driver)
		if err != nil {
			return durable.Outcome{}, err
		}
		return *o, nil
	}, transact.WithStepName("drive"),
		// A session held by a live process (one thought dead that was
		// not), or a run that stopped with its turn open, is tried again.
		transact.WithStepMaxRetries(30),
		transact.WithStepBaseInterval(250*time.Millisecond),
		transact.WithStepMaxInterval(e.opts.RecoverAfter),
		transact.WithStepRetryPredicate(func(err error) bool {
			return errors.Is(err, session.ErrLocked) || errors.Is(err, durable.ErrStillOpen)
		}))
}

// waitEvery is how often Wait looks at a turn's status, unless
// Options.PollEvery is shorter.
const waitEvery = 100 * time.Millisecond

// Wait blocks until turn id has ended and returns its outcome; a turn
// whose workflow failed is an error saying why.
func (e *Engine) Wait(ctx context.Context, id string) (*durable.Outcome, error) {
	h, err := transact.RetrieveWorkflow[durable.Outcome](e.client, id)
	if err != nil {
		return nil, fmt.Errorf("dbos: turn %s: %w", id, err)
	}
	every := waitEvery
	if p := e.opts.PollEvery; p > 0 && p < every {
		every = p
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		st, err := h.GetStatus()
		if err != nil {
			return nil, fmt.Errorf("dbos: turn %s: %w", id, err)
		}
		switch st.Status {
		case transact.WorkflowStatusSuccess:
			o, err := h.GetResult()
			if err != nil {
				return nil, fmt.Errorf("dbos: turn %s: %w", id, err)
			}
			return &o, nil
		case transact.WorkflowStatusError:
			return nil, fmt.Errorf("dbos: turn %s failed: %w", id, st.Error)
		case transact.WorkflowStatusCancelled:
			return nil, fmt.Errorf("dbos: turn %s was cancelled", id)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// recoverLoop takes over, every RecoverEvery, the turns of workers that
// died, until ctx is done.
func (e *Engine) recoverLoop(ctx context.Context) {
	defer close(e.done)
	h, ok := e.opts.Store.(durable.Holder)
	if !ok {
		return // no leases: DBOS recovers this executor's own turns at Launch
	}
	tick := time.NewTicker(e.opts.RecoverEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := e.recover(ctx, h); err != nil && ctx.Err() == nil {
			e.opts.Logger.Warn("dbos: look for abandoned turns", "err", err)
		}
	}
}

// recover re-enqueues the turns of this queue that another executor
// began at least RecoverAfter ago and whose session nobody live holds:
// their worker died (DBOS itself would recover them only when an
// executor of the same id starts again). It returns how many it took
// over. Re-enqueueing a turn whose worker is in fact alive costs a
// second execution that finds the turn's end on the log, or waits for
// the lease.
func (e *Engine) recover(ctx context.Context, h durable.Holder) (int, error) {
	wfs, err := transact.ListWorkflows(e.ctx,
		transact.WithFilterStatus(transact.WorkflowStatusPending),
		transact.WithFilterQueueName(e.opts.Queue),
		transact.WithFilterName(workflowName),
		transact.WithFilterLoadInput(true))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, wf := range wfs {
		since := wf.StartedAt
		if since.IsZero() {
			since = wf.UpdatedAt
		}
		if wf.ExecutorID == e.executor || time.Since(since) < e.opts.RecoverAfter {
			continue
		}
		t, err := turnOf(wf.Input)
		if err != nil {
			e.opts.Logger.Warn("dbos: a pending turn with unreadable input", "workflow", wf.ID, "err", err)
			continue
		}
		if held, err := h.Held(ctx, t.Session); err != nil || held {
			continue
		}
		if _, err := transact.ResumeWorkflow[durable.Outcome](e.ctx, wf.ID, transact.WithResumeQueue(e.opts.Queue)); err != nil {
			return n, fmt.Errorf("take over turn %s: %w", wf.ID, err)
		}
		e.opts.Logger.Info("dbos: took over the turn of a worker that died", "workflow", wf.ID,
			"session", t.Session, "executor", wf.ExecutorID)
		n++
	}
	return n, nil
}

// turnOf reads a workflow's input, as ListWorkflows decoded it, as a Turn.
func turnOf(in any) (durable.Turn, error) {
	var t durable.Turn
	if tt, ok := in.(durable.Turn); ok {
		return tt, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return t, err
	}
	if s, ok := in.(string); ok {
		b = []byte(s)
	}
	err = json.Unmarshal(b, &t)
	if err == nil && t.Session == "" {
		err = errors.New("no session")
	}
	return t, err
}
