package mcp_test

import "syscall"

// helperAttrs keeps a test's helper servers from outliving the test binary.
func helperAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
