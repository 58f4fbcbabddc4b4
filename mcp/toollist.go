package mcp

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/reinhq/rein/tool"
)

// setToolsLocked installs a tool list, applying the filters, and returns
// warnings about it.
func (s *server) setToolsLocked(list []ToolInfo) []string {
	s.raw = list
	var warnings []string
	enabled := s.cfg.Enabled
	var kept []ToolInfo
	for _, t := range list {
		if len(enabled) > 0 && !slices.Contains(enabled, t.Name) {
			continue
		}
		if slices.Contains(s.cfg.Disabled, t.Name) {
			continue
		}
		if s.cfg.Filter != nil && !s.cfg.Filter(t) {
			continue
		}
		kept = append(kept, t)
	}
	// Keep the rein names of tools that stay, so a refresh never renames.
	prev := s.byName
	s.byName = make(map[string]*Tool, len(kept))
	s.tools = s.tools[:0:0]
	given := map[string]bool{}
	for _, info := range kept {
		if old := prev[info.Name]; old != nil && !given[old.spec.Name] {
			given[old.spec.Name] = true
		}
	}
	for _, info := range kept {
		name := ""
		if old := prev[info.Name]; old != nil {
			name = old.spec.Name
		} else {
			plain := "mcp_" + sanitize(s.cfg.Name) + "_" + sanitize(info.Name)
			name = toolName(s.cfg.Name, info.Name, func(n string) bool {
				return given[n] || s.m.nameTaken(s, n) || (n == plain && s.m.shadowed(s, n))
			})
			given[name] = true
		}
		spec := tool.Spec{Name: name, Description: info.Description, Schema: info.Schema, Annotations: info.Annotations}
		if spec.Description == "" {
			spec.Description = info.Title
		}
		t := &Tool{srv: s, info: info, spec: spec}
		v, err := tool.NewValidator(info.Schema)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("tool %q: schema does not compile (%v); arguments go unchecked", info.Name, err))
			spec.Schema = json.RawMessage(`{"type":"object"}`)
			t.spec = spec
			v, _ = tool.NewValidator(spec.Schema)
		}
		t.valid = v
		s.byName[info.Name] = t
		s.tools = append(s.tools, t)
	}
	s.m.claimNames(s, s.names())
	s.warn = warnings
	return warnings
}

// filterWarningsLocked names enabled tools the server does not have.
func (s *server) filterWarningsLocked() []string {
	var w []string
	for _, n := range s.cfg.Enabled {
		if !slices.ContainsFunc(s.raw, func(t ToolInfo) bool { return t.Name == n }) {
			w = append(w, fmt.Sprintf("enabled tool %q is not offered by the server", n))
		}
	}
	return w
}

// names returns the rein names of the current tools; callers hold mu.
func (s *server) names() []string {
	out := make([]string, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.spec.Name
	}
	return out
}

// toolsChanged rebuilds the model's tool set from every server.
func (m *Manager) toolsChanged() {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	set, _ := tool.NewSet()
	for s := range m.offered() {
		s.mu.Lock()
		tools := slices.Clone(s.tools)
		s.mu.Unlock()
		for _, t := range tools {
			if err := set.Add(t); err != nil {
				m.log.Warn("mcp: tool left out", "server", s.cfg.Name, "tool", t.info.Name, "err", err)
			}
		}
	}
	m.set.Store(set)
}

// offered yields the servers whose tools the model sees: all but the
// host-only ones, in configuration order.
func (m *Manager) offered() iter.Seq[*server] {
	return func(yield func(*server) bool) {
		for _, s := range m.servers {
			if !s.cfg.HostOnly && !yield(s) {
				return
			}
		}
	}
}

// nameTaken reports whether a server other than s already gave name.
// Names of different servers can meet: server "a" with tool "b_c" and
// server "a_b" with tool "c" are both mcp_a_b_c.
func (m *Manager) nameTaken(s *server, name string) bool {
	m.namesMu.Lock()
	defer m.namesMu.Unlock()
	owner := m.names[name]
	return owner != nil && owner != s
}

// shadowed reports whether name, given by s, lies in the namespace of a
// server with a longer name: "mcp_srv_x_echo" of server "srv" (tool
// "x_echo") could also be tool "echo" of server "srv.x". The more specific
// server keeps the plain name, so names never depend on which server
// connected first.
func (m *Manager) shadowed(s *server, name string) bool {
	own := sanitize(s.cfg.Name)
	for _, o := range m.servers {
		other := sanitize(o.cfg.Name)
		if o != s && len(other) > len(own) && strings.HasPrefix(name, "mcp_"+other+"_") {
			return true
		}
	}
	return false
}

// claimNames records the names s now gives, releasing the ones it gave up.
func (m *Manager) claimNames(s *server, names []string) {
	m.namesMu.Lock()
	defer m.namesMu.Unlock()
	for n, owner := range m.names {
		if owner == s {
			delete(m.names, n)
		}
	}
	for _, n := range names {
		m.names[n] = s
	}
}
