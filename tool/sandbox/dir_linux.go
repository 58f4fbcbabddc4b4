//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

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
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// MkdirAll creates the directory name and any missing parents.
func (p *Policy) MkdirAll(name string, perm os.FileMode) error {
	if p.ReadOnly {
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
			result = deniedError(op, name, pat)
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
