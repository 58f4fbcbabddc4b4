package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/session"
)

// holder is what a lock's record says about the process that holds it.
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

// getAttr and setAttr read and write an extended attribute of a file;
// tests replace them with those of a file system that has none.
var (
	getAttr = unix.Fgetxattr
	setAttr = unix.Fsetxattr
)

// holderAttr is the extended attribute of a session's file that records
// the process appending to it.
const holderAttr = "user.rein.holder"

// lockSession takes the append lock of the session file at path without
// waiting: an flock on a descriptor of its own, open for appending,
// which the caller keeps as the file it appends to. The lock is released
// when that file is closed, and a second open in this process does not
// share it, so two Stores in one process exclude each other as two
// processes do.
//
// While the lock is held for appending (record), the holder's pid, host
// and time are recorded in the file's attribute holderAttr, which costs
// no file of its own, for the error another process gets; where the file
// system keeps no user attributes, in the file legacy (<id>.lock). A
// clean release removes the record, so a record found when the lock is
// taken was left by a process that died while appending: stale is then
// that holder. Stores of earlier versions locked legacy and kept their
// record in it: such a record is stale as well, and a live process of
// one holding legacy holds the session.
func lockSession(path, legacy string, id session.ID, now time.Time, record bool) (f *os.File, stale *holder, err error) {
	for {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, notFound(id, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("jsonl: open session %q: %w", id, err)
		}
		if err = flockNow(f); err != nil {
			if errors.Is(err, syscall.EWOULDBLOCK) {
				err = heldError(id, f, legacy)
			} else {
				err = fmt.Errorf("jsonl: lock session %q: %w", id, err)
			}
			f.Close()
			return nil, nil, err
		}
		// A file deleted (and perhaps created again) since the open is
		// not the session's any more: open again.
		if st, err := os.Stat(path); err == nil {
			if fst, ferr := f.Stat(); ferr == nil && os.SameFile(st, fst) {
				break
			}
		}
		f.Close()
	}
	if lf, err := os.OpenFile(legacy, os.O_RDWR, 0); err == nil {
		err := flockNow(lf)
		lf.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			err := heldError(id, f, legacy)
			f.Close()
			return nil, nil, err
		}
	}
	stale = recorded(f, legacy)
	if record {
		host, _ := os.Hostname()
		b, _ := json.Marshal(holder{PID: os.Getpid(), Host: host, Since: now.UTC()})
		// The record only names the holder and marks a crash; failing
		// to write it does not weaken the lock, so it is best effort.
		if setAttr(int(f.Fd()), holderAttr, b, 0) != nil {
			writeLegacy(legacy, append(b, '\n'))
		}
	}
	return f, stale, nil
}

// unlockSession releases a lock taken by lockSession, first removing its
// record, and a stale record of an earlier version, to say the holder
// left cleanly, and closes the file.
func unlockSession(f *os.File, legacy string) error {
	if f == nil {
		return nil
	}
	unix.Fremovexattr(int(f.Fd()), holderAttr) // none is there unless held for appending
	os.Remove(legacy)
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return f.Close()
}

// flockNow takes f's exclusive flock without waiting.
func flockNow(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// heldError is the error for a session whose lock is held elsewhere,
// naming the holder the record of f's lock names.
func heldError(id session.ID, f *os.File, legacy string) error {
	var h holder
	if r := recorded(f, legacy); r != nil {
		h = *r
	}
	return fmt.Errorf("jsonl: session %q is held by %s; wait for it to finish or stop it: %w", id, h, session.ErrLocked)
}

// recorded returns the holder a record of f's lock names, or nil if
// there is none.
func recorded(f *os.File, legacy string) *holder {
	buf := make([]byte, 256)
	n, err := getAttr(int(f.Fd()), holderAttr, buf)
	switch {
	case err == nil && n > 0:
		h := parseHolder(buf[:n])
		return &h
	case errors.Is(err, unix.ERANGE):
		return &holder{} // a record longer than any this package writes
	}
	if b, err := os.ReadFile(legacy); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		h := parseHolder(b)
		return &h
	}
	return nil
}

// writeLegacy writes a record to legacy, synced, for a file system
// without user attributes.
func writeLegacy(legacy string, b []byte) {
	f, err := os.OpenFile(legacy, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return
	}
	if _, err := f.Write(b); err == nil {
		f.Sync()
	}
	f.Close()
}

func parseHolder(b []byte) holder {
	var h holder
	if json.Unmarshal([]byte(strings.TrimSpace(string(b))), &h) != nil {
		return holder{}
	}
	return h
}
