package sandbox

import (
	"path"
	"path/filepath"
	"strings"
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
