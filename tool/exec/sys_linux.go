package exec

import "syscall"

// sysProcAttr starts the leader of a new session (so it has no
// controlling terminal to inject input into, and its group id is its
// pid) and has the kernel kill it when rein dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
