package sqlite

import (
	"fmt"
	"time"

	"github.com/reinhq/rein/session/internal/proc"
)

// alive reports whether the process that took a lock may still be
// running. A holder on another host cannot be checked and is taken to be
// alive.
func alive(h holder, thisHost string) bool {
	if h.Host != thisHost || h.PID <= 0 {
		return h.Host != thisHost
	}
	return proc.Alive(h.PID, h.Started)
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
