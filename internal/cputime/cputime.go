// Package cputime reads the CPU time the process has used, for the
// benchmarks that report it beside the time on the clock: on a shared
// machine it is the steadier of the two, and it counts the work of every
// goroutine, including the ones a step hands work to.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the user and system CPU time this process has used so
// far, or zero when the system cannot say.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
