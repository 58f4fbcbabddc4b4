package mcp

import (
	"fmt"
	"slices"
	"strings"
)

// ServerStatus is what Servers reports about one server.
type ServerStatus struct {
	Name      string
	Transport string
	State     string // StateIdle, StateLazy, StateConnecting, StateConnected, StateDown or StateClosed
	HostOnly  bool
	Protocol  string   // the negotiated protocol version, once connected
	Tools     []string // rein names, after filtering
	PID       int      // a stdio server's process id while connected
	Err       string   // the last connection error
	// Instructions are what the server asked hosts to tell the model.
	Instructions string
}

// Servers reports every server, in configuration order.
func (m *Manager) Servers() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.cfg.Name, Transport: s.cfg.transport(), State: s.state, HostOnly: s.cfg.HostOnly,
			Protocol: s.protocol, Tools: s.names(), PID: s.pid, Instructions: s.instr}
		if s.lastErr != nil {
			st.Err = s.lastErr.Error()
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// CachedTools returns the tool list server last reported (before
// filtering), for a host to keep as ServerConfig.CachedTools.
func (m *Manager) CachedTools(server string) ([]ToolInfo, error) {
	s, err := m.server(server)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.raw), nil
}

// Instructions returns the instructions of the connected servers whose
// tools the model sees, one section per server, for the system prompt.
// It is empty when no server gave any.
func (m *Manager) Instructions() string {
	var b strings.Builder
	for s := range m.offered() {
		s.mu.Lock()
		instr := strings.TrimSpace(s.instr)
		s.mu.Unlock()
		if instr == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## MCP server %s (tools mcp_%s_*)\n\n%s", s.cfg.Name, sanitize(s.cfg.Name), instr)
	}
	return b.String()
}
