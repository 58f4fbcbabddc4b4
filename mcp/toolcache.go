package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// toolCachePath is where a server's tool list is cached, or "" for none.
func (m *Manager) toolCachePath(server string) string {
	if m.opts.ToolCache == "" {
		return ""
	}
	return filepath.Join(m.opts.ToolCache, sanitize(server)+".json")
}

// loadToolCache reads a server's cached tool list; a missing or bad cache
// is no cache.
func (m *Manager) loadToolCache(server string) []ToolInfo {
	p := m.toolCachePath(server)
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var tools []ToolInfo
	if err := json.Unmarshal(b, &tools); err != nil {
		m.log.Warn("mcp: ignoring a bad tool cache", "server", server, "err", err)
		return nil
	}
	return tools
}

// saveToolCache keeps a server's tool list for the next lazy start.
func (m *Manager) saveToolCache(server string, tools []ToolInfo) {
	p := m.toolCachePath(server)
	if p == "" {
		return
	}
	b, err := json.Marshal(tools)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(p), 0o700)
	}
	if err == nil {
		tmp := p + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, p)
		}
	}
	if err != nil {
		m.log.Warn("mcp: could not cache the tool list", "server", server, "err", err)
	}
}
