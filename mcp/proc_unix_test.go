//go:build unix && !linux

package mcp_test

import "syscall"

// helperAttrs keeps a test's helper servers in their own process group.
func helperAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
