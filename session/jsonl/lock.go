package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/reinhq/rein/session"
)

// holder is what a lock file says about the process that holds it.
type holder struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (h holder) String() string {
	if h.PID == 0 {
		return "another process"
	}
	return fmt.Sprintf("pid %d on host %s since %s", h.PID, h.Host, h.Since.Format(time.RFC3339))
}

// lockFile takes the advisory lock of path without waiting. The lock
// belongs to the returned file: it is released when the file is closed,
// and a second open of the same path in this process does not share it,
// so two Stores in one process exclude each other as two processes do.
//
// The file names its holder while the lock is held for appending
// (record): pid, host and time, for the error another process gets. A
// Store that releases the lock cleanly empties the file, so a lock file
// that still names a holder when the lock is taken was left by a process
// that died while appending: stale is then that holder.
func lockFile(path string, id session.ID, now time.Time, record bool) (f *os.File, stale *holder, err error) {
	for {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("jsonl: open lock of session %q: %w", id, err)
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				h := readHolder(path)
				return nil, nil, fmt.Errorf("jsonl: session %q is held by %s; wait for it to finish or stop it: %w", id, h, session.ErrLocked)
			}
			return nil, nil, fmt.Errorf("jsonl: lock session %q: %w", id, err)
		}
		// A holder that released the lock cleanly removed the file first:
		// a lock taken on a file no longer at path is no lock, open again.
		if st, err := os.Stat(path); err == nil {
			if fst, ferr := f.Stat(); ferr == nil && os.SameFile(st, fst) {
				break
			}
		}
		f.Close()
	}
	if b, _ := io.ReadAll(f); len(strings.TrimSpace(string(b))) > 0 {
		h := parseHolder(b)
		stale = &h
	}
	if !record {
		return f, stale, nil
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(holder{PID: os.Getpid(), Host: host, Since: now.UTC()})
	b = append(b, '\n')
	// The holder record only names us in errors; failing to write it does
	// not weaken the lock, so it is best effort.
	if err := f.Truncate(0); err == nil {
		f.WriteAt(b, 0)
		f.Sync()
	}
	return f, stale, nil
}

// unlockFile releases a lock taken by lockFile, first removing the file
// (or, when it cannot be removed, emptying it) to say the holder left
// cleanly: a clean exit leaves no lock file behind.
func unlockFile(f *os.File) error {
	if f == nil {
		return nil
	}
	if os.Remove(f.Name()) != nil {
		f.Truncate(0)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return f.Close()
}

func readHolder(path string) holder {
	b, err := os.ReadFile(path)
	if err != nil {
		return holder{}
	}
	return parseHolder(b)
}

func parseHolder(b []byte) holder {
	var h holder
	if json.Unmarshal([]byte(strings.TrimSpace(string(b))), &h) != nil {
		return holder{}
	}
	return h
}
