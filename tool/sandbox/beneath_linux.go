//go:build linux

package sandbox

import (
	"errors"
	"fmt"
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
