//go:build unix

package exec

import (
	"os"
	"syscall"
)

var killSignal os.Signal = syscall.SIGKILL

func signalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	err := syscall.Kill(-p.Pid, s)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

func groupAlive(p *os.Process) bool { return syscall.Kill(-p.Pid, 0) == nil }
