//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// isolate puts a stdio server in its own process group, so that Close can
// end the programs it starts too (npx, shell wrappers), and, on Linux,
// asks the kernel to kill it if rein dies first.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// killGroup ends whatever is left of a server's process group.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
