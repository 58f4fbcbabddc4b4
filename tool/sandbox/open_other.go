//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

// Open is not supported on this platform: confinement needs openat2 or
// openat with O_NOFOLLOW, so every call fails with ErrUnsupported.
func (p *Policy) Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	return nil, p.unsupported("open", name)
}

// OpenApproved fails with ErrUnsupported on this platform.
func (p *Policy) OpenApproved(name string, flag int, perm os.FileMode) (*os.File, error) {
	return nil, p.unsupported("open", name)
}

// Stat fails with ErrUnsupported on this platform.
func (p *Policy) Stat(name string) (fs.FileInfo, error) { return nil, p.unsupported("stat", name) }

// ReadDir fails with ErrUnsupported on this platform.
func (p *Policy) ReadDir(name string) ([]fs.DirEntry, error) {
	return nil, p.unsupported("readdir", name)
}

// MkdirAll fails with ErrUnsupported on this platform.
func (p *Policy) MkdirAll(name string, perm os.FileMode) error { return p.unsupported("mkdir", name) }

// Remove fails with ErrUnsupported on this platform.
func (p *Policy) Remove(name string) error { return p.unsupported("remove", name) }

// Rename fails with ErrUnsupported on this platform.
func (p *Policy) Rename(oldname, newname string) error { return p.unsupported("rename", oldname) }

func (p *Policy) unsupported(op, name string) error {
	if err := p.init(); err != nil {
		return err
	}
	if _, err := p.rel(op, name); err != nil {
		return err
	}
	return &Error{Op: op, Path: name, Err: ErrUnsupported,
		Reason: "file access is not available: rein confines paths only on Linux"}
}

// ReadFile fails with ErrUnsupported on this platform.
func (p *Policy) ReadFile(name string, buf []byte, limit int64) ([]byte, error) {
	return nil, p.unsupported("open", name)
}
