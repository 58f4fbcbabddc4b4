//go:build unix && !linux

package exec

import "syscall"

// sysProcAttr starts the leader of a new session. This platform has no
// kill-on-parent-death: a process outlives rein if rein is killed.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
