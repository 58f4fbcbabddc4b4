package agent

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/reinhq/rein/tool"
)

// callRunner is how the tool pipeline runs calls: the agent's settings
// for it, fixed at New, and its workers.
type callRunner struct {
	parallel int           // calls at once
	grace    time.Duration // how long a cancelled call may take to return
	now      func() time.Time
	state    tool.StateStore
	approver tool.Approver
	dryRun   bool
	durable  bool // sync the start of a call that may not be re-run before it runs
	log      *slog.Logger
	workers  *workers
}

// workers run tool calls, and drive the loops of Runs, on goroutines
// that outlive one call, so a step pays no goroutine start and runs on a
// stack already grown by earlier calls. A worker waits for the next job
// after each; an idle one ends when the agent closes. A call the loop
// abandoned keeps its worker until it returns.
type workers struct {
	jobs chan job
	quit chan struct{}
	once sync.Once
	wg   *sync.WaitGroup
}

type job struct {
	co    *coLoop // a run's loop to drive, instead of a call
	x     *callRunner
	ctl   *control
	s     *callState
	done  chan<- completion
	start time.Time
}

func newWorkers(wg *sync.WaitGroup) *workers {
	return &workers{jobs: make(chan job), quit: make(chan struct{}), wg: wg}
}

// run gives j to an idle worker, or to a new one when none is idle.
func (w *workers) run(j job) {
	select {
	case w.jobs <- j:
		return
	default:
	}
	w.wg.Add(1)
	go w.loop(j)
}

func (w *workers) loop(j job) {
	defer w.wg.Done()
	for {
		j.exec()
		select {
		case j = <-w.jobs:
		case <-w.quit:
			return
		}
	}
}

// close ends the idle workers; busy ones end after their call.
func (w *workers) close() { w.once.Do(func() { close(w.quit) }) }

// exec runs the job's call on a worker, through tool.Run, and hands it
// back to the loop; or it drives the job's loop.
func (j job) exec() {
	if j.co != nil {
		j.co.drive()
		return
	}
	c := j.completed()
	j.ctl.returned(j.s)
	j.done <- c
}

// completed runs j's call, on a worker or a loop's driver, and returns
// its completion. A panic outside the tool's body (tool.Run recovers the
// body's), such as a state store's, is logged here, where the call is
// known, and carried, naming the call, for the loop to raise unless the
// loop has given the call up.
func (j job) completed() (c completion) {
	c.idx = j.s.idx
	defer func() {
		if v := recover(); v != nil {
			name, id := j.s.entry.spec.Name, j.s.call.ID
			j.x.log.Error("a tool call panicked outside its tool", "tool", name, "call", id, "panic", fmt.Sprint(v))
			c.panicked = fmt.Sprintf("tool %s, call %s, outside the tool's body: %v", name, id, v)
		}
		c.dur = time.Since(j.start)
	}()
	c.res = j.run()
	return c
}

func (j job) run() *tool.Result {
	s := j.s
	if j.x.state != nil {
		st, err := tool.LoadState(s.ctx, j.x.state, s.tc.Session, s.entry.spec.Name)
		if err != nil {
			return tool.Errorf("Tool error: load the tool's state: %v", err).WithMeta(tool.MetaError, err)
		}
		s.tc.State = st
	}
	res, err := tool.Run(s.ctx, s.entry.t, &s.tc)
	if err != nil {
		j.x.log.Error("a tool's state was not saved", "tool", s.entry.spec.Name, "call", s.call.ID, "err", err)
	}
	return res
}
