package exec

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// initState is what of an init a process of its command may change and
// the next command would inherit: its resource limits (prlimit), nice
// value (renice), I/O priority (ionice), CPU affinity (taskset) and OOM
// score (/proc/1/oom_score_adj). An init whose state its command
// changed is not reused.
type initState struct {
	limits   [unix.RLIMIT_RTTIME + 1]unix.Rlimit
	nice     int
	ioprio   uintptr
	affinity unix.CPUSet
	oomScore string
	err      bool // a part could not be read: the state counts as changed
}

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
	var errno syscall.Errno
	if st.ioprio, _, errno = syscall.RawSyscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, 0, 0); errno != 0 {
		st.err = true
	}
	if unix.SchedGetaffinity(0, &st.affinity) != nil {
		st.err = true
	}
	if st.oomScore, err = readSmall("/proc/self/oom_score_adj"); err != nil {
		st.err = true
	}
	return st
}

// readSmall reads a small file with one read, without the runtime's
// poller, which a file of /proc has no use for.
func readSmall(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
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
