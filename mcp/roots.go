package mcp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Root is a directory servers may work in, as the host tells them
// (roots/list). URI is a file:// URI.
type Root struct {
	URI  string
	Name string
}

// DirRoot is the root for directory dir, named after its last element.
func DirRoot(dir string) (Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Root{}, fmt.Errorf("mcp: root %s: %w", dir, err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return Root{URI: u.String(), Name: filepath.Base(abs)}, nil
}

// Roots returns the roots servers are told about.
func (m *Manager) Roots() []Root {
	m.rootsMu.Lock()
	defer m.rootsMu.Unlock()
	return slices.Clone(m.roots)
}

// SetRoots replaces the roots servers are told about; connected servers
// get notifications/roots/list_changed and list them again.
func (m *Manager) SetRoots(roots []Root) error {
	for _, r := range roots {
		if u, err := url.Parse(r.URI); err != nil || u.Scheme != "file" {
			return fmt.Errorf("mcp: root %q is not a file:// URI; make one with DirRoot", r.URI)
		}
	}
	m.rootsMu.Lock()
	old := m.roots
	m.roots = slices.Clone(roots)
	m.rootsMu.Unlock()
	for _, s := range m.servers {
		s.mu.Lock()
		c := s.client
		s.mu.Unlock()
		if c != nil {
			changeRoots(c, old, roots)
		}
	}
	return nil
}

// changeRoots tells a client's servers the roots changed from old to now.
func changeRoots(c *sdk.Client, old, now []Root) {
	var gone []string
	for _, r := range old {
		if !slices.Contains(now, r) {
			gone = append(gone, r.URI)
		}
	}
	var added []*sdk.Root
	for _, r := range now {
		if !slices.Contains(old, r) {
			added = append(added, &sdk.Root{URI: r.URI, Name: r.Name})
		}
	}
	if len(gone) > 0 {
		c.RemoveRoots(gone...)
	}
	c.AddRoots(added...)
}
