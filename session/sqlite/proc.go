package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processStart returns when process pid started, in clock ticks since
// boot, from /proc; ok is false where that is not available. Together with
// the pid it names a process even after the pid is reused.
func processStart(pid int) (int64, bool) {
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

// alive reports whether the process that took a lock may still be
// running. A holder on another host cannot be checked and is taken to be
// alive.
func alive(h holder, thisHost string) bool {
	if h.Host != thisHost || h.PID <= 0 {
		return h.Host != thisHost
	}
	if err := syscall.Kill(h.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if h.Started != 0 {
		if st, ok := processStart(h.PID); ok && st != h.Started {
			return false // the pid was reused by another process
		}
	}
	return true
}

// holder is a row of the locks table.
type holder struct {
	Owner   string
	PID     int
	Host    string
	Started int64
	Since   time.Time
}

func (h holder) String() string {
	return fmt.Sprintf("pid %d on host %s since %s", h.PID, h.Host, h.Since.Format(time.RFC3339))
}
