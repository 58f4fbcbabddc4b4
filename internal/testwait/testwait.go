// Package testwait waits, in tests, for a condition that something outside
// the test's control makes true: a process that exits, a file a shell
// writes, goroutines that wind down. It polls on a ticker and gives up at a
// deadline, so a test that waits says how long it is willing to.
//
// Where the waiting is on the test's own goroutines and timers, use
// testing/synctest instead; where it is on an event the code signals, wait
// on that signal.
package testwait

import "time"

// Tick is how often For checks its condition.
const Tick = 5 * time.Millisecond

// For reports whether cond held within timeout. It checks cond at once and
// then once every Tick; it returns as soon as cond holds.
func For(timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}
