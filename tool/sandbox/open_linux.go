//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Open opens name inside the workspace like os.OpenFile. It refuses paths
// outside the root, denied paths, secret files (ErrNeedsApproval; see
// OpenApproved), writes to a read-only workspace and anything that is not
// a regular file (or, with O_DIRECTORY, a directory).
func (p *Policy) Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	return p.open(name, flag, perm, false)
}

// OpenApproved is Open for a caller that has the user's approval to open
// a secret file. Every other rule still applies.
func (p *Policy) OpenApproved(name string, flag int, perm os.FileMode) (*os.File, error) {
	return p.open(name, flag, perm, true)
}

func (p *Policy) open(name string, flag int, perm os.FileMode, approved bool) (*os.File, error) {
	writes := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
	if writes && p.ReadOnly {
		return nil, p.readOnly("write", name)
	}
	wantDir := flag&unix.O_DIRECTORY != 0
	// The kernel truncates while it opens: truncate only once the file
	// is known to be one that may be written.
	truncate := flag&os.O_TRUNC != 0
	flag &^= os.O_TRUNC
	var f *os.File
	err := p.at("open", name, approved, func(rootfd int, rel string) error {
		fd, st, err := p.openChecked(rootfd, rel, flag, uint32(perm.Perm()), wantDir)
		if err != nil {
			return err
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return err
		}
		if truncate && st.Mode&unix.S_IFMT == unix.S_IFREG {
			if err := unix.Ftruncate(fd, 0); err != nil {
				unix.Close(fd)
				return err
			}
		}
		f = os.NewFile(uintptr(fd), filepath.Join(p.rootReal, filepath.FromSlash(rel)))
		return nil
	})
	if err := notOpenable(name, err); err != nil {
		return nil, err
	}
	return f, nil
}

var (
	errNotRegular = errors.New("not a regular file")
	errHardLinked = errors.New("more than one hard link")
)

// openChecked opens rel beneath rootfd without blocking on a FIFO or
// taking a terminal, and keeps it only if it is a regular file with no
// other names (unless the policy allows hard links) or, with wantDir, a
// directory. The descriptor is left non-blocking; it is closed on error.
func (p *Policy) openChecked(rootfd int, rel string, flag int, perm uint32, wantDir bool) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openNoSymlinks(rootfd, rel, flag|unix.O_NONBLOCK|unix.O_NOCTTY, perm)
	if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) {
		return -1, st, errNotRegular // a FIFO with no reader, or a device
	}
	if err != nil {
		return -1, st, err
	}
	err = unix.Fstat(fd, &st)
	if err == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if st.Nlink > 1 && !p.AllowHardLinks {
				// The kernel gives the link count, not where the other
				// names are, so one may be outside the workspace.
				err = errHardLinked
			}
		case unix.S_IFDIR:
			if !wantDir {
				err = unix.EISDIR
			}
		default:
			err = errNotRegular
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	return fd, st, nil
}

// notOpenable turns the refusals of open and ReadFile into the errors
// callers see.
func notOpenable(name string, err error) error {
	switch {
	case errors.Is(err, errNotRegular):
		return &Error{Op: "open", Path: name, Err: ErrDenied,
			Reason: fmt.Sprintf("%s is not a regular file (a device, FIFO or socket); only regular files can be read or written", name)}
	case errors.Is(err, errHardLinked):
		return &Error{Op: "open", Path: name, Err: ErrDenied,
			Reason: fmt.Sprintf("%s has more than one hard link, and another may be outside the workspace; make it a file of its own (cp %s tmp && mv tmp %s) to work on it", name, name, name)}
	}
	return err
}

// ReadFile reads the regular file name whole, like os.ReadFile, under
// the same rules as Open. It reuses buf's storage when it is large
// enough, and refuses files over limit bytes (limit <= 0: no limit) with
// an error wrapping ErrTooLarge. It is the cheap path for tools that read
// many files.
func (p *Policy) ReadFile(name string, buf []byte, limit int64) ([]byte, error) {
	var out []byte
	err := p.at("open", name, false, func(rootfd int, rel string) error {
		fd, st, err := p.openChecked(rootfd, rel, unix.O_RDONLY, 0, false)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if limit > 0 && st.Size > limit {
			return &Error{Op: "open", Path: name, Err: ErrTooLarge,
				Reason: fmt.Sprintf("%s is %d bytes, over the %d-byte limit", name, st.Size, limit)}
		}
		out, err = readAll(fd, st.Size, buf, limit, name)
		return err
	})
	var se *Error
	if errors.As(err, &se) && se.Err == ErrTooLarge {
		return nil, se
	}
	if err := notOpenable(name, err); err != nil {
		return nil, err
	}
	return out, nil
}

// readAll reads fd, which fstat said holds size bytes, to its end into
// buf's storage when it is large enough, refusing to grow past limit.
func readAll(fd int, size int64, buf []byte, limit int64, name string) ([]byte, error) {
	want := int(size) + 1 // one more to see growth or EOF
	if cap(buf) < want {
		buf = make([]byte, 0, want+want/8)
	}
	b := buf[:cap(buf)]
	n := 0
	for {
		if n == len(b) {
			if limit > 0 && int64(n) > limit {
				return nil, &Error{Op: "open", Path: name, Err: ErrTooLarge,
					Reason: fmt.Sprintf("%s grew past the %d-byte limit while it was read", name, limit)}
			}
			b = append(b, 0)[:cap(b)]
		}
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
		if int64(n) == size && n < len(b) && size > 0 {
			break // all fstat promised; skip the read that would see EOF
		}
	}
	return b[:n], nil
}
