package agent

import (
	"iter"
	"runtime"
	"time"
)

// A run that no stream reads runs its loop as a coroutine that a worker
// drives, so that a tool call with none beside it (batch.alone) runs on
// that worker with no hand-off between goroutines: the loop yields the call, the driver runs it and
// resumes the loop with its result, and both switches go straight from
// one goroutine to the other without the scheduler. The caller of Run
// waits meanwhile, and watches: when a cancel or a Suspend has given the
// call its grace and the call has not returned, the caller gives the
// call up and has another worker resume the loop, so Run returns though
// the call never does.
//
// A Stream keeps its loop on the caller's goroutine, which its events
// are given on, and runs each call on a worker.

// coLoop is a run's loop as a coroutine.
type coLoop struct {
	r     *runState
	next  func() (struct{}, bool)
	yield func(struct{}) bool
	out   chan any // the panic or Goexit that ended the loop, or nil

	// Between the loop and the driver it yields to; each switch orders
	// them.
	job   job        // the call the loop yielded
	res   completion // its result
	given givenUp    // how the watcher gave the call up, set before it starts the next driver

	// Under the agent's mu.
	cur *callState // the call a driver runs, or nil
	gen uint64     // counts the calls run, so a late driver knows its call was given up
}

// givenUp says how the watcher gave up a call that outlived its grace.
type givenUp int

const (
	notGivenUp givenUp = iota
	givenUpCancelled
	givenUpSuspended
)

// coRun runs body as a coroutine driven by a worker and waits for it on
// the caller's goroutine, watching the calls run inline.
func (r *runState) coRun(body func(*runState) (*Result, error)) (*Result, error) {
	co := &coLoop{r: r, out: make(chan any, 1)}
	var res *Result
	var err error
	var stop func()
	co.next, stop = iter.Pull(func(yield func(struct{}) bool) {
		co.yield = yield
		res, err = body(r)
	})
	defer stop()
	r.pipe.co = co
	r.a.calls.workers.run(job{co: co})
	switch v := co.await(); v.(type) {
	case nil:
		return res, err
	case goexited:
		runtime.Goexit()
	default:
		panic(v)
	}
	return nil, nil // not reached
}

// call runs j on the driver, from the loop: it reports the call's
// completion, or how the watcher gave it up.
func (co *coLoop) call(j job) (completion, givenUp) {
	co.job, co.given = j, notGivenUp
	co.yield(struct{}{})
	return co.res, co.given
}

// drive runs the loop until it ends or yields a call, runs the call, and
// goes on, until the loop ends or a call of its is given up.
func (co *coLoop) drive() {
	ended := false
	defer func() {
		if ended {
			return
		}
		v := recover()
		if v == nil {
			v = goexited{} // the loop called runtime.Goexit, as t.FailNow does
		}
		co.out <- v
	}()
	for {
		if _, more := co.next(); !more {
			ended = true
			co.out <- nil
			return
		}
		if !co.runCall() {
			ended = true
			return
		}
	}
}

// goexited stands for a runtime.Goexit of the loop, which Run's caller
// then calls too, as it would have with the loop on its goroutine.
type goexited struct{}

// runCall runs the call the loop yielded and reports whether it is still
// this driver's: false when the watcher gave it up and another driver
// resumed the loop.
func (co *coLoop) runCall() bool {
	j, mu := co.job, co.r.ctl.mu
	mu.Lock()
	co.gen++
	gen := co.gen
	co.cur = j.s
	if how, _ := co.askedLocked(j.s); how != notGivenUp {
		// A cancel or a Suspend came before the watcher could see this
		// call; tell it again.
		co.r.ctl.kickLocked()
	}
	mu.Unlock()
	c := j.completed()
	mu.Lock()
	j.s.returned = true
	mine := co.gen == gen && co.cur != nil // else given up, and cur may be the next driver's
	if mine {
		co.cur = nil
	}
	mu.Unlock()
	if mine {
		co.res = c
	}
	return mine
}

// await waits for the loop to end, on the caller's goroutine. When a
// cancel or a Suspend comes while a call runs on the driver, it times
// the call's grace, as a batch waiting for its calls does, and gives the
// call up when the grace is over.
func (co *coLoop) await() (panicked any) {
	r := co.r
	done := r.ctx.Done()
	var timer *time.Timer
	var timerC <-chan time.Time
	var gen uint64 // the call timed
	var how givenUp
	var at time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case v := <-co.out:
			return v
		case <-done:
			done = nil
		case <-r.ctl.watch:
		case <-timerC:
			timerC = nil
			co.giveUp(gen, how)
			continue
		}
		g, h, due, ok := co.due()
		if !ok || (g == gen && timerC != nil && !due.Before(at)) {
			continue
		}
		gen, how, at = g, h, due
		if timer == nil {
			timer = time.NewTimer(time.Until(at))
		} else {
			timer.Reset(time.Until(at))
		}
		timerC = timer.C
	}
}

// due says when the call running on the driver is to be given up, and
// how: a grace from now when the run or the call is cancelled, the
// Suspend's grace when one is asked. ok is false when no call runs or
// nothing asks it to stop. The caller keeps the earliest for a call.
func (co *coLoop) due() (gen uint64, how givenUp, at time.Time, ok bool) {
	mu := co.r.ctl.mu
	mu.Lock()
	s, gen := co.cur, co.gen
	var sus *suspension
	if s != nil {
		how, sus = co.askedLocked(s)
	}
	mu.Unlock()
	switch how {
	case givenUpCancelled:
		return gen, how, time.Now().Add(co.r.a.calls.grace), true
	case givenUpSuspended:
		return gen, how, sus.end(), true
	}
	return 0, notGivenUp, time.Time{}, false
}

// askedLocked says what asks s, the call a driver runs, to stop, as a
// batch waiting for its calls sees it: a cancel of the run or of s
// first, else a Suspend (with it). The agent's mu is held.
func (co *coLoop) askedLocked(s *callState) (givenUp, *suspension) {
	r := co.r
	if r.ctx.Err() != nil || s.cancelReason != "" {
		return givenUpCancelled, nil
	}
	if sus := r.ctl.suspended(r.ctx); sus != nil {
		return givenUpSuspended, sus
	}
	return notGivenUp, nil
}

// giveUp gives up the call gen if it is still running, and has another
// worker resume the loop without it.
func (co *coLoop) giveUp(gen uint64, how givenUp) {
	mu := co.r.ctl.mu
	mu.Lock()
	if co.cur == nil || co.gen != gen {
		mu.Unlock()
		return
	}
	co.cur = nil
	mu.Unlock()
	co.given = how
	co.r.a.calls.workers.run(job{co: co})
}
