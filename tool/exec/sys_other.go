//go:build !unix

package exec

import (
	"os"
	"syscall"
)

var killSignal = os.Kill

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup signals the leader only: this platform has no process
// groups to signal.
func signalGroup(p *os.Process, sig os.Signal) error { return p.Signal(sig) }

func groupAlive(p *os.Process) bool { return false }
