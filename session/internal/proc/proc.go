// Package proc names a process of this host in a way that survives pid
// reuse, and tells whether that process still runs. Stores use it to tell
// a lock left by a process that died from one held by a live process.
package proc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Start returns when process pid started, in clock ticks since boot, from
// /proc; ok is false where that is not available. Together with the pid
// it names a process even after the pid is reused.
func Start(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// after it start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 { // f[0] is field 3; starttime is field 22
		return 0, false
	}
	n, err := strconv.ParseInt(f[19], 10, 64)
	return n, err == nil
}

// Alive reports whether process pid of this host, started at started (as
// Start reports it; 0 if unknown), may still be running. A pid of 0 or
// less names no process and is not alive.
func Alive(pid int, started int64) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if started != 0 {
		if st, ok := Start(pid); ok && st != started {
			return false // the pid was reused by another process
		}
	}
	return true
}

// Space names the process-id space of this process: the machine's boot
// and the pid namespace, as "BOOT_ID pid:[INODE]"; "" where that is not
// available. Two processes with the same Space see each other's pids,
// so Alive answers for one about the other; a host name alone does not
// say that (containers may share one, each with its own pids).
func Space() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + " " + ns
}
