package shell

import (
	"syscall"
	"time"

	"github.com/reinhq/rein/tool/exec"
)

// killGroup sends SIGTERM to the process group, then SIGKILL after
// grace unless done closes first (the leader exited); the group is sent
// SIGKILL in any case so no member outlives it.
func killGroup(p exec.Process, grace time.Duration, done <-chan struct{}) {
	p.Signal(syscall.SIGTERM)
	if grace > 0 {
		select {
		case <-done:
		case <-time.After(grace):
		}
	}
	p.Signal(syscall.SIGKILL)
}
