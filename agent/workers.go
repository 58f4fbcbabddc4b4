package agent

import (
	"sync"
	"time"
)

// workers run tool calls on goroutines that outlive one call, so a step
// pays no goroutine start and runs on a stack already grown by earlier
// calls. A worker waits for the next call after each; an idle one ends
// when the agent closes. A call the loop abandoned keeps its worker
// until it returns.
type workers struct {
	jobs chan job
	quit chan struct{}
	once sync.Once
	wg   *sync.WaitGroup
}

type job struct {
	a     *Agent
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
		exec(j.a, j.s, j.done, j.start)
		select {
		case j = <-w.jobs:
		case <-w.quit:
			return
		}
	}
}

// close ends the idle workers; busy ones end after their call.
func (w *workers) close() { w.once.Do(func() { close(w.quit) }) }
