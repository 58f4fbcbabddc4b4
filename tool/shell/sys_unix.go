//go:build unix

package shell

import "syscall"

// sysProcAttr puts the command in its own process group, so it and
// everything it starts can be signalled together.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
