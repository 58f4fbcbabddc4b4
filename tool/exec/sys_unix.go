//go:build unix

package exec

import (
	"errors"
	"os"
	"syscall"
)

var killSignal os.Signal = syscall.SIGKILL

func signalGroup(p *os.Process, sig os.Signal) error {
	if _, ok := sig.(syscall.Signal); !ok {
		return p.Signal(sig)
	}
	return signalPid(p.Pid, sig)
}

// signalPid sends sig to the process group led by pid; a group that
// has ended is not an error.
func signalPid(pid int, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return errors.New("exec: " + sig.String() + " is not a signal this platform can send to a process group")
	}
	err := syscall.Kill(-pid, s)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

func groupAlive(p *os.Process) bool { return syscall.Kill(-p.Pid, 0) == nil }
