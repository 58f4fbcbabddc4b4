//go:build !unix

package shell

import (
	"os"
	"syscall"
	"time"
)

// sysProcAttr has no process groups to set up here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the leader only: this platform has no process groups
// to signal, so processes it started may survive.
func killGroup(pid int, grace time.Duration, done <-chan struct{}) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

func groupAlive(pid int) bool { return false }
