package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
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

// DefaultSecretPatterns name files that usually hold credentials. A
// pattern without a slash matches a file name at any depth; one with a
// slash matches the trailing components of a path.
var DefaultSecretPatterns = []string{
	".env", ".env.*", "*.env",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
	".aws/credentials", ".aws/config", ".netrc", ".pgpass", ".npmrc", ".pypirc",
	".git-credentials", ".docker/config.json", ".kube/config",
	"credentials.json", "service-account*.json", "secrets.yaml", "secrets.yml",
	"*.tfvars", ".htpasswd",
}

// Class says how sensitive a path is.
type Class int

const (
	// Normal files may be read and written within the policy's rules.
	Normal Class = iota
	// Secret files probably hold credentials: opening one needs approval.
	Secret
)

// String returns "normal" or "secret".
func (c Class) String() string {
	if c == Secret {
		return "secret"
	}
	return "normal"
}

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

// namePattern is a secret pattern compiled for the common shapes: an
// exact name, "*suffix" and "prefix*" are matched without path.Match.
type namePattern struct {
	raw   string
	slash bool // matched against trailing components
	kind  byte // '=' exact, 's' suffix, 'p' prefix, 'g' glob
	lit   string
	last  *namePattern // for slash patterns: the last component, checked first
}

func compileNames(pats []string) []namePattern {
	out := make([]namePattern, 0, len(pats))
	for _, raw := range pats {
		np := namePattern{raw: raw, slash: strings.Contains(raw, "/"), kind: 'g'}
		if np.slash {
			if last := raw[strings.LastIndexByte(raw, '/')+1:]; last != "" && last != "**" {
				np.last = &compileNames([]string{last})[0]
			}
		} else {
			const meta = "*?[\\"
			switch {
			case !strings.ContainsAny(raw, meta):
				np.kind, np.lit = '=', raw
			case strings.HasPrefix(raw, "*") && !strings.ContainsAny(raw[1:], meta):
				np.kind, np.lit = 's', raw[1:]
			case strings.HasSuffix(raw, "*") && !strings.ContainsAny(raw[:len(raw)-1], meta):
				np.kind, np.lit = 'p', raw[:len(raw)-1]
			}
		}
		out = append(out, np)
	}
	return out
}

func (np *namePattern) matchBase(base string) bool {
	switch np.kind {
	case '=':
		return base == np.lit
	case 's':
		return strings.HasSuffix(base, np.lit)
	case 'p':
		return strings.HasPrefix(base, np.lit)
	}
	ok, err := path.Match(np.raw, base)
	return err == nil && ok
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

// checkChars refuses characters that could make a name look like, or be
// normalised by some layer into, a path separator or a dot, and invisible
// or control characters. Names are refused rather than normalised: a
// normalised name would differ from what the kernel opens.
func checkChars(name string) error {
	if !utf8.ValidString(name) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range name {
		switch {
		case r == 0:
			return errors.New("contains a NUL byte")
		case r < 0x20 || r == 0x7f:
			return errors.New("contains a control character")
		case r < 0x80:
			continue
		case lookAlike(r):
			return fmt.Errorf("contains %U, which looks like a path separator or dot", r)
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			return fmt.Errorf("contains the invisible character %U", r)
		}
	}
	return nil
}

// lookAlike lists characters whose compatibility form, or whose glyph, is
// "/", "\\" or ".".
func lookAlike(r rune) bool {
	switch r {
	case '\uFF0F', // fullwidth solidus
		'\u2215',           // division slash
		'\u2044',           // fraction slash
		'\u29F8',           // big solidus
		'\u2571',           // box drawings diagonal
		'\uFF3C',           // fullwidth reverse solidus
		'\u2216',           // set minus
		'\u29F9',           // big reverse solidus
		'\uFE68',           // small reverse solidus
		'\uFF0E',           // fullwidth full stop
		'\uFE52',           // small full stop
		'\u2024',           // one dot leader
		'\u2025',           // two dot leader
		'\u2026',           // horizontal ellipsis
		'\u3002',           // ideographic full stop
		'\uFF61',           // halfwidth ideographic full stop
		'\u0701', '\u0702', // syriac full stops
		'\u00B7', '\u2027', '\u0387', // middle dots
		'\u2E33', '\uA4F8':
		return true
	}
	return false
}

// Classify reports whether name is a secret file. It matches the name as
// given and, when it resolves inside the workspace, the path its symlinks
// lead to. A path it cannot check is reported Normal: the open methods
// check again on the path they actually open.
func (p *Policy) Classify(name string) Class {
	if err := p.init(); err != nil {
		return Normal
	}
	r, err := p.rel("classify", name)
	if err != nil {
		return Normal
	}
	if p.secret(r) {
		return Secret
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(p.rootReal, filepath.FromSlash(r))); err == nil {
		if rr, ok := within(p.rootReal, real); ok && p.secret(filepath.ToSlash(rr)) {
			return Secret
		}
	}
	return Normal
}

func (p *Policy) secret(rel string) bool {
	base := rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		base = rel[i+1:]
	}
	for i := range p.secrets {
		np := &p.secrets[i]
		if np.slash {
			if (np.last == nil || np.last.matchBase(base)) && matchTail(np.raw, rel) {
				return true
			}
		} else if np.matchBase(base) {
			return true
		}
	}
	return false
}

// Denies reports the Deny rule that covers name, if any. It looks at the
// name only, not where its symlinks lead (the open methods check both);
// walkers use it to skip denied subtrees without trying them.
func (p *Policy) Denies(name string) (rule string, denied bool) {
	if err := p.init(); err != nil {
		return "", false
	}
	rel, err := p.rel("check", name)
	if err != nil {
		return "", false
	}
	return p.denied(rel)
}

// denied reports the Deny pattern that covers rel, if any.
func (p *Policy) denied(rel string) (string, bool) {
	for _, pat := range p.Deny {
		if matchTree(pat, rel) {
			return pat, true
		}
	}
	return "", false
}

// checkRel applies Deny and secret rules to a resolved relative path.
func (p *Policy) checkRel(op, name, rel string, approved bool) error {
	if pat, ok := p.denied(rel); ok {
		return &Error{Op: op, Path: name, Err: ErrDenied,
			Reason: fmt.Sprintf("path %s is denied by the workspace policy (rule %q); leave it alone or ask the user", name, pat)}
	}
	if !approved && p.secret(rel) {
		return &Error{Op: op, Path: name, Err: ErrNeedsApproval,
			Reason: fmt.Sprintf("%s looks like a secrets file; reading it needs the user's approval, ask them first", name)}
	}
	return nil
}

func (p *Policy) readOnly(op, name string) error {
	return &Error{Op: op, Path: name, Err: ErrReadOnly,
		Reason: fmt.Sprintf("cannot %s %s: the workspace is read-only", op, name)}
}

// Match reports whether a slash-separated path matches a glob pattern.
// Besides path.Match syntax ("*", "?", "[...]" within one component), a
// "**" component matches zero or more components. A malformed pattern
// matches nothing.
func Match(pattern, name string) bool {
	return matchParts(splitSlash(pattern), splitSlash(name))
}

func splitSlash(s string) []string {
	s = strings.Trim(s, "/")
	if s == "" || s == "." {
		return nil
	}
	return strings.Split(s, "/")
}

func matchParts(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchParts(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchTail matches a pattern without a slash against the last component,
// one with a slash against the trailing components ("/" first anchors it
// at the root).
func matchTail(pat, rel string) bool {
	parts := splitSlash(rel)
	if len(parts) == 0 {
		return false
	}
	if strings.HasPrefix(pat, "/") {
		return matchParts(splitSlash(pat), parts)
	}
	pp := splitSlash(pat)
	if len(pp) == 0 || len(pp) > len(parts) && pp[0] != "**" {
		return false
	}
	for i := 0; i < len(parts); i++ {
		if matchParts(pp, parts[i:]) {
			return true
		}
	}
	return false
}

// matchTree matches a Deny pattern against rel or any directory above it.
// A pattern without a slash matches a name at any depth, as in .gitignore.
func matchTree(pat, rel string) bool {
	parts := splitSlash(rel)
	anchored := strings.Contains(strings.TrimSuffix(pat, "/"), "/")
	pp := splitSlash(pat)
	if len(pp) == 0 {
		return false
	}
	for end := 1; end <= len(parts); end++ {
		if anchored {
			if matchParts(pp, parts[:end]) {
				return true
			}
		} else if ok, err := path.Match(pp[0], parts[end-1]); err == nil && ok {
			return true
		}
	}
	return false
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
