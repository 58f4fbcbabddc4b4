package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Sentinel errors. Every error a Policy returns for a refused path wraps
// exactly one of them, so callers can branch with errors.Is.
var (
	// ErrOutside: the path leaves the workspace root (by "..", an absolute
	// path, a symlink, or a look-alike character).
	ErrOutside = errors.New("sandbox: path outside the workspace")
	// ErrDenied: the path matches a Deny pattern or is not a regular file
	// where one is required (devices, FIFOs, sockets).
	ErrDenied = errors.New("sandbox: path denied by policy")
	// ErrReadOnly: the policy is read-only and the operation would write.
	ErrReadOnly = errors.New("sandbox: workspace is read-only")
	// ErrNeedsApproval: the path holds secrets; opening it needs a person's
	// approval first (see OpenApproved).
	ErrNeedsApproval = errors.New("sandbox: needs approval")
	// ErrUnsupported: confinement is not implemented on this platform, so
	// every access is refused.
	ErrUnsupported = errors.New("sandbox: confinement not supported on this platform")
	// ErrTooLarge: ReadFile was given a file over its limit.
	ErrTooLarge = errors.New("sandbox: file too large")
)

// Error is a refused path. Its message is written for the model: it names
// the path, says why, and says what to do instead.
type Error struct {
	Op     string // "open", "stat", "readdir", "mkdir", "remove", "rename"
	Path   string // the path as the caller gave it
	Err    error  // one of the package's sentinels
	Reason string // the message, complete
}

// Error returns the model-facing message.
func (e *Error) Error() string { return e.Reason }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// Policy confines filesystem access to one directory tree, the workspace.
//
// Every method resolves its path against Root and refuses anything that
// would leave it: "..", absolute paths elsewhere, symlinks pointing out at
// any component (also one swapped in after a check: the final open never
// follows a symlink it did not check), names with characters that look
// like "/" or "." or are invisible, and non-regular files where content
// is read or written.
//
// A hard link inside the workspace to a file outside it is the same
// file under two names, and the kernel tells only how many names a file
// has, not where they are. So Open and ReadFile refuse a regular file
// with more than one link (unless AllowHardLinks), before a byte is
// read or written; Stat, ReadDir, Remove and Rename, which touch only
// the name inside the workspace, work as usual.
//
// A Policy is safe for concurrent use. Do not change its fields after
// first use.
type Policy struct {
	// Root is the workspace directory. Relative paths are resolved
	// against it; absolute paths must lie inside it.
	Root string
	// ReadOnly refuses every operation that would change the workspace.
	ReadOnly bool
	// Deny lists glob patterns (relative to Root; "**" matches any number
	// of directories) of paths that may not be touched at all. A pattern
	// that matches a directory denies everything below it.
	Deny []string
	// SecretPatterns lists patterns of files whose content needs approval
	// to read. Nil means DefaultSecretPatterns; an empty non-nil slice
	// means none.
	SecretPatterns []string
	// Commands are the shell command rules for tools that run commands.
	Commands CommandRules
	// AllowHardLinks lets Open and ReadFile open regular files that have
	// more than one hard link. By default they are refused: another name
	// of the same file may lie outside the workspace (a link to
	// ~/.ssh/id_ed25519 made inside it), and nothing short of searching
	// the whole file system proves otherwise.
	AllowHardLinks bool

	once     sync.Once
	rootAbs  string // cleaned absolute Root
	rootReal string // rootAbs with symlinks resolved
	rootErr  error
	secrets  []namePattern // compiled SecretPatterns

	fdOnce sync.Once
	rootFD int // a descriptor of rootReal, kept for the Policy's life
	fdErr  error
}

func (p *Policy) init() error {
	p.once.Do(func() {
		if p.Root == "" {
			p.rootErr = errors.New("sandbox: Policy.Root is empty; set it to the workspace directory")
			return
		}
		abs, err := filepath.Abs(p.Root)
		if err != nil {
			p.rootErr = fmt.Errorf("sandbox: resolve root %q: %w", p.Root, err)
			return
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			p.rootErr = fmt.Errorf("sandbox: workspace root %s: %w", abs, err)
			return
		}
		p.rootAbs, p.rootReal = abs, real
		pats := p.SecretPatterns
		if pats == nil {
			pats = DefaultSecretPatterns
		}
		p.secrets = compileNames(pats)
	})
	return p.rootErr
}

// RootDir returns the workspace root as an absolute path with symlinks
// resolved, or an error if the root does not exist.
func (p *Policy) RootDir() (string, error) {
	if err := p.init(); err != nil {
		return "", err
	}
	return p.rootReal, nil
}

// Rel returns name as a clean slash-separated path relative to the root
// ("." for the root itself) after the lexical checks every method makes:
// it refuses paths that leave the root and names with look-alike or
// invisible characters. It does not touch the filesystem, so symlinks are
// not resolved; the filesystem methods do that.
func (p *Policy) Rel(name string) (string, error) {
	if err := p.init(); err != nil {
		return "", err
	}
	return p.rel("", name)
}

func (p *Policy) outside(op, name string) error {
	return &Error{Op: op, Path: name, Err: ErrOutside,
		Reason: fmt.Sprintf("path %s is outside the workspace %s; use a path inside it", name, p.rootAbs)}
}

// rel does the lexical half of confinement.
func (p *Policy) rel(op, name string) (string, error) {
	if name == "" {
		return ".", nil
	}
	if err := checkChars(name); err != nil {
		return "", &Error{Op: op, Path: name, Err: ErrOutside,
			Reason: fmt.Sprintf("path %q %s; use a plain path inside the workspace %s", name, err.Error(), p.rootAbs)}
	}
	var r string
	if filepath.IsAbs(name) {
		c := filepath.Clean(name)
		var ok bool
		if r, ok = within(p.rootAbs, c); !ok {
			if r, ok = within(p.rootReal, c); !ok {
				return "", p.outside(op, name)
			}
		}
	} else {
		r = filepath.Clean(name)
	}
	r = filepath.ToSlash(r)
	if r == ".." || strings.HasPrefix(r, "../") {
		return "", p.outside(op, name)
	}
	return r, nil
}

// within reports name relative to root when name is root or below it.
func within(root, name string) (string, bool) {
	if name == root {
		return ".", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if strings.HasPrefix(name, prefix) {
		return name[len(prefix):], true
	}
	return "", false
}

// checkRel applies Deny and secret rules to a resolved relative path.
func (p *Policy) checkRel(op, name, rel string, approved bool) error {
	if pat, ok := p.denied(rel); ok {
		return deniedError(op, name, pat)
	}
	if !approved && p.secret(rel) {
		return &Error{Op: op, Path: name, Err: ErrNeedsApproval,
			Reason: fmt.Sprintf("%s looks like a secrets file; reading it needs the user's approval, ask them first", name)}
	}
	return nil
}

// deniedError refuses name, which the Deny pattern pat covers.
func deniedError(op, name, pat string) error {
	return &Error{Op: op, Path: name, Err: ErrDenied,
		Reason: fmt.Sprintf("path %s is denied by the workspace policy (rule %q); leave it alone or ask the user", name, pat)}
}

// readOnly refuses a change to a read-only workspace (or reports why the
// root cannot be used).
func (p *Policy) readOnly(op, name string) error {
	if err := p.init(); err != nil {
		return err
	}
	return &Error{Op: op, Path: name, Err: ErrReadOnly,
		Reason: fmt.Sprintf("cannot %s %s: the workspace is read-only", op, name)}
}

// osErr rewrites an error from the kernel to name the caller's path
// rather than an internal one.
func osErr(op, name string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}
