package exec

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// initState is what of an init a process of its command may change and
// the next command would inherit: its resource limits (prlimit), the
// nice value, scheduling policy, I/O priority and CPU affinity of the
// thread that starts commands (renice, chrt, ionice, taskset), and what
// its /proc files that its user may write say (the OOM score, the
// session's autogroup, the core dump filter). An init whose state its
// command changed is not reused.
type initState struct {
	limits    [unix.RLIMIT_RTTIME + 1]unix.Rlimit
	nice      int
	policy    uintptr
	ioprio    uintptr
	affinity  unix.CPUSet
	procFiles [3]string
	err       bool // a part could not be read: the state counts as changed
}

// initProcFiles are the files of /proc/self that initState holds;
// absent ones read as empty.
var initProcFiles = [3]string{"/proc/self/oom_score_adj", "/proc/self/autogroup", "/proc/self/coredump_filter"}

// readInitState reads the calling process's state.
func readInitState() initState {
	var st initState
	for r := range st.limits {
		if unix.Getrlimit(r, &st.limits[r]) != nil {
			st.err = true
		}
	}
	var err error
	if st.nice, err = unix.Getpriority(unix.PRIO_PROCESS, 0); err != nil {
		st.err = true
	}
	const ioprioWhoProcess = 1
	var errno, errno2 syscall.Errno
	st.ioprio, _, errno = syscall.RawSyscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, 0, 0)
	st.policy, _, errno2 = syscall.RawSyscall(unix.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	if errno != 0 || errno2 != 0 || unix.SchedGetaffinity(0, &st.affinity) != nil {
		st.err = true
	}
	for i, f := range initProcFiles {
		if st.procFiles[i], err = readSmall(f); err != nil {
			st.err = true
		}
	}
	return st
}

// readSmall reads a small file with one read, without the runtime's
// poller, which a file of /proc has no use for; an absent file reads as
// empty.
func readSmall(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var b [64]byte
	n, err := unix.Read(fd, b[:])
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// same reports whether st and now are the same state, both read whole.
func (st initState) same(now initState) bool { return !st.err && st == now }
