//go:build unix

package shell

import (
	"syscall"
	"time"
)

// sysProcAttr puts the command in its own process group, so it and
// everything it starts can be signalled together.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGTERM to the process group, then SIGKILL after
// grace unless done closes first (the leader exited); the group is sent
// SIGKILL in any case so no member outlives it.
func killGroup(pgid int, grace time.Duration, done <-chan struct{}) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// groupAlive reports whether any process of the group still exists.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
