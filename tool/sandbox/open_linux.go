//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// openat2 support is probed on first use; when the kernel lacks it (or a
// seccomp filter hides it) the walk falls back to openat with O_NOFOLLOW
// one component at a time. Tests force the fallback with forceWalk.
var (
	openat2State atomic.Int32 // 0 unknown, 1 available, 2 unavailable
	forceWalk    bool
)

const maxSymlinks = 40

func (p *Policy) openRoot() (int, error) {
	if err := p.init(); err != nil {
		return -1, err
	}
	p.fdOnce.Do(func() {
		fd, err := unix.Open(p.rootReal, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			p.fdErr = fmt.Errorf("sandbox: open workspace root %s: %w", p.rootReal, err)
			return
		}
		p.rootFD = fd
		// The descriptor lives as long as the Policy.
		runtime.AddCleanup(p, func(fd int) { unix.Close(fd) }, fd)
	})
	return p.rootFD, p.fdErr
}

// openNoSymlinks opens rel beneath rootfd without following any symlink.
func openNoSymlinks(rootfd int, rel string, flags int, perm uint32) (int, error) {
	if !forceWalk && openat2State.Load() != 2 {
		how := unix.OpenHow{
			Flags:   uint64(flags | unix.O_CLOEXEC),
			Mode:    uint64(perm),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		if flags&(unix.O_CREAT|unix.O_TMPFILE) == 0 {
			how.Mode = 0
		}
		fd, err := unix.Openat2(rootfd, rel, &how)
		if err == nil || !(errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && openat2State.Load() == 0) {
			if err == nil || !errors.Is(err, unix.EPERM) {
				openat2State.CompareAndSwap(0, 1)
			}
			return fd, err
		}
		openat2State.Store(2)
	}
	return walkOpen(rootfd, rel, flags, perm)
}

// walkOpen opens rel one component at a time with O_NOFOLLOW.
func walkOpen(rootfd int, rel string, flags int, perm uint32) (int, error) {
	if rel == "." {
		return unix.Openat(rootfd, ".", flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, perm)
	}
	parts := strings.Split(rel, "/")
	dir := rootfd
	defer func() {
		if dir != rootfd {
			unix.Close(dir)
		}
	}()
	for _, c := range parts[:len(parts)-1] {
		if c == ".." || c == "." || c == "" {
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(dir, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if dir != rootfd {
			unix.Close(dir)
		}
		dir = next
	}
	last := parts[len(parts)-1]
	if last == ".." || last == "." || last == "" {
		return -1, unix.EXDEV
	}
	return unix.Openat(dir, last, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, perm)
}

// resolve follows the symlinks in rel by hand, beneath rootfd, and
// returns the path they lead to. A component that does not exist ends the
// resolution; the rest is kept literally.
func (p *Policy) resolve(op, name string, rootfd int, rel string) (string, error) {
	todo := splitSlash(rel)
	var done []string
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".", "":
			continue
		case "..":
			if len(done) == 0 {
				return "", p.outside(op, name)
			}
			done = done[:len(done)-1]
			continue
		}
		cur := strings.Join(append(done, c), "/")
		var st unix.Stat_t
		if err := unix.Fstatat(rootfd, cur, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			// Missing: keep the rest as written; opening it decides.
			done = append(done, c)
			done = append(done, todo...)
			break
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			done = append(done, c)
			continue
		}
		links++
		if links > maxSymlinks {
			return "", osErr(op, name, unix.ELOOP)
		}
		target, err := readlinkat(rootfd, cur)
		if err != nil {
			return "", osErr(op, name, err)
		}
		if err := checkChars(target); err != nil {
			return "", &Error{Op: op, Path: name, Err: ErrOutside,
				Reason: fmt.Sprintf("path %s goes through a symlink whose target %s; use a plain path inside the workspace %s", name, err.Error(), p.rootAbs)}
		}
		if path.IsAbs(target) {
			r, ok := within(p.rootReal, filepath.Clean(target))
			if !ok {
				r, ok = within(p.rootAbs, filepath.Clean(target))
			}
			if !ok {
				return "", &Error{Op: op, Path: name, Err: ErrOutside,
					Reason: fmt.Sprintf("path %s goes through the symlink %s, which points outside the workspace %s; use a path inside it", name, cur, p.rootAbs)}
			}
			done = nil
			target = filepath.ToSlash(r)
		}
		todo = append(splitSlash(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// at resolves name and runs fn with the root fd and the resolved,
// symlink-free relative path, applying Deny (and secret rules unless
// approved). fn's open must not follow symlinks; if one was swapped in
// after resolution it fails with ELOOP and at resolves once more.
func (p *Policy) at(op, name string, approved bool, fn func(rootfd int, rel string) error) error {
	rootfd, err := p.openRoot()
	if err != nil {
		return err
	}
	rel, err := p.rel(op, name)
	if err != nil {
		return err
	}
	resolved := false
	for attempt := 0; ; attempt++ {
		if err := p.checkRel(op, name, rel, approved); err != nil {
			return err
		}
		err := fn(rootfd, rel)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EXDEV):
			return p.outside(op, name)
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && !resolved:
			if attempt >= 3 {
				return &Error{Op: op, Path: name, Err: ErrOutside,
					Reason: fmt.Sprintf("path %s changed while it was being opened (a symlink appeared); try again with a plain path", name)}
			}
			// A symlink on the way: resolve by hand, check the path it
			// leads to, and open that without following anything.
			r, rerr := p.resolve(op, name, rootfd, rel)
			if rerr != nil {
				return rerr
			}
			rel, resolved = r, true
		default:
			return osErr(op, name, err)
		}
	}
}

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
		if err := p.init(); err != nil {
			return nil, err
		}
		return nil, p.readOnly("write", name)
	}
	wantDir := flag&unix.O_DIRECTORY != 0
	// The kernel truncates while it opens: truncate only once the file
	// is known to be one that may be written.
	truncate := flag&os.O_TRUNC != 0
	flag &^= os.O_TRUNC
	var f *os.File
	err := p.at("open", name, approved, func(rootfd int, rel string) error {
		fd, err := openNoSymlinks(rootfd, rel, flag|unix.O_NONBLOCK|unix.O_NOCTTY, uint32(perm.Perm()))
		if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) {
			return errNotRegular // a FIFO with no reader, or a device
		}
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if err := p.checkLinks(&st); err != nil {
				unix.Close(fd)
				return err
			}
		case unix.S_IFDIR:
			if !wantDir {
				unix.Close(fd)
				return unix.EISDIR
			}
		default:
			unix.Close(fd)
			return errNotRegular
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

// checkLinks refuses a regular file with other names, unless the policy
// allows hard links: the kernel gives the link count, not where the
// other names are, so one may be outside the workspace.
func (p *Policy) checkLinks(st *unix.Stat_t) error {
	if st.Nlink > 1 && !p.AllowHardLinks {
		return errHardLinked
	}
	return nil
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

// Stat returns information about name, following symlinks that stay
// inside the workspace. Secret files may be stat'ed without approval.
func (p *Policy) Stat(name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := p.at("stat", name, true, func(rootfd int, rel string) error {
		fd, err := openNoSymlinks(rootfd, rel, unix.O_PATH, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), path.Base("/"+rel))
		defer f.Close()
		fi, err = f.Stat()
		return err
	})
	return fi, err
}

// ReadDir lists the directory name, sorted by file name. Entries are
// reported as they are (a symlink is a symlink); open them through the
// policy to follow them.
func (p *Policy) ReadDir(name string) ([]fs.DirEntry, error) {
	var ents []fs.DirEntry
	err := p.at("readdir", name, true, func(rootfd int, rel string) error {
		fd, err := openNoSymlinks(rootfd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), filepath.Join(p.rootReal, filepath.FromSlash(rel)))
		defer f.Close()
		ents, err = f.ReadDir(-1)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				return pe.Err
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortEntries(ents)
	return ents, nil
}

// MkdirAll creates the directory name and any missing parents.
func (p *Policy) MkdirAll(name string, perm os.FileMode) error {
	if p.ReadOnly {
		if err := p.init(); err != nil {
			return err
		}
		return p.readOnly("create", name)
	}
	return p.at("mkdir", name, true, func(rootfd int, rel string) error {
		if rel == "." {
			return nil
		}
		parts := strings.Split(rel, "/")
		for i := range parts {
			dir, base := ".", parts[i]
			if i > 0 {
				dir = strings.Join(parts[:i], "/")
			}
			dfd, err := openNoSymlinks(rootfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				return err
			}
			err = unix.Mkdirat(dfd, base, uint32(perm.Perm()))
			if errors.Is(err, unix.EEXIST) {
				var st unix.Stat_t
				err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
				if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					err = unix.ELOOP // resolve the link and go again
				} else if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
					err = unix.ENOTDIR
					unix.Close(dfd)
					return &os.PathError{Op: "mkdir", Path: strings.Join(parts[:i+1], "/"), Err: errNotDir}
				}
			}
			unix.Close(dfd)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

var errNotDir = errors.New("exists and is not a directory")

// Remove removes the file or empty directory name. The root itself cannot
// be removed. A symlink is removed, not what it points to.
func (p *Policy) Remove(name string) error {
	if p.ReadOnly {
		if err := p.init(); err != nil {
			return err
		}
		return p.readOnly("remove", name)
	}
	return p.parentAt("remove", name, func(dfd int, base string) error {
		err := unix.Unlinkat(dfd, base, 0)
		if errors.Is(err, unix.EISDIR) {
			err = unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR)
		}
		return err
	})
}

// Rename renames (moves) oldname to newname, both inside the workspace.
func (p *Policy) Rename(oldname, newname string) error {
	if p.ReadOnly {
		if err := p.init(); err != nil {
			return err
		}
		return p.readOnly("rename", oldname)
	}
	return p.parentAt("rename", oldname, func(odfd int, obase string) error {
		return p.parentAt("rename", newname, func(ndfd int, nbase string) error {
			return unix.Renameat(odfd, obase, ndfd, nbase)
		})
	})
}

// parentAt opens the directory holding name (resolving symlinks on the
// way, but not the last component) and runs fn on it.
func (p *Policy) parentAt(op, name string, fn func(dfd int, base string) error) error {
	if err := p.init(); err != nil {
		return err
	}
	rel, err := p.rel(op, name)
	if err != nil {
		return err
	}
	if rel == "." {
		return &Error{Op: op, Path: name, Err: ErrDenied,
			Reason: fmt.Sprintf("cannot %s the workspace root itself", op)}
	}
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	var result error
	err = p.at(op, dir, true, func(rootfd int, rdir string) error {
		full := base
		if rdir != "." {
			full = rdir + "/" + base
		}
		if pat, ok := p.denied(full); ok {
			result = &Error{Op: op, Path: name, Err: ErrDenied,
				Reason: fmt.Sprintf("path %s is denied by the workspace policy (rule %q); leave it alone or ask the user", name, pat)}
			return nil
		}
		dfd, err := openNoSymlinks(rootfd, rdir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		if err := fn(dfd, base); err != nil {
			var se *Error
			if errors.As(err, &se) {
				result = err
				return nil
			}
			result = osErr(op, name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return result
}

// ReadFile reads the regular file name whole, like os.ReadFile, under
// the same rules as Open. It reuses buf's storage when it is large
// enough, and refuses files over limit bytes (limit <= 0: no limit) with
// an error wrapping ErrTooLarge. It is the cheap path for tools that read
// many files.
func (p *Policy) ReadFile(name string, buf []byte, limit int64) ([]byte, error) {
	var out []byte
	err := p.at("open", name, false, func(rootfd int, rel string) error {
		fd, err := openNoSymlinks(rootfd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) {
			return errNotRegular
		}
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if err := p.checkLinks(&st); err != nil {
				return err
			}
		case unix.S_IFDIR:
			return unix.EISDIR
		default:
			return errNotRegular
		}
		if limit > 0 && st.Size > limit {
			return &Error{Op: "open", Path: name, Err: ErrTooLarge,
				Reason: fmt.Sprintf("%s is %d bytes, over the %d-byte limit", name, st.Size, limit)}
		}
		size := int(st.Size) + 1 // one more to see growth or EOF
		if cap(buf) < size {
			buf = make([]byte, 0, size+size/8)
		}
		b := buf[:cap(buf)]
		n := 0
		for {
			if n == len(b) {
				if limit > 0 && int64(n) > limit {
					return &Error{Op: "open", Path: name, Err: ErrTooLarge,
						Reason: fmt.Sprintf("%s grew past the %d-byte limit while it was read", name, limit)}
				}
				b = append(b, 0)[:cap(b)]
			}
			m, err := unix.Read(fd, b[n:])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if m == 0 {
				break
			}
			n += m
			if int64(n) == st.Size && n < len(b) && st.Size > 0 {
				break // all fstat promised; skip the read that would see EOF
			}
		}
		out = b[:n]
		return nil
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
