package sandbox

import (
	"path"
	"strings"
)

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
