package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ProjectFileName is the project file other MCP clients read from a
// workspace's root: {"mcpServers": {NAME: SERVER}}.
const ProjectFileName = ".mcp.json"

// projectServer is one entry of a project file: a stdio server (command,
// args, env) or a remote one (type "http" or "sse", url, headers).
type projectServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// ReadProjectFile reads the servers of an MCP project file (the
// .mcp.json format other clients share), in name order. A missing file is
// no servers. Values keep their ${VAR} and ${VAR:-default} templates,
// resolved when a connection opens. The servers of the "servers" key (the
// variant some editors write) are read too.
func ReadProjectFile(path string) ([]ServerConfig, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	var file struct {
		MCPServers map[string]projectServer `json:"mcpServers"`
		Servers    map[string]projectServer `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; it should hold {\"mcpServers\": {NAME: {\"command\": …} or {\"type\": \"http\", \"url\": …}}}", ErrConfig, path, err)
	}
	all := map[string]projectServer{}
	for n, s := range file.Servers {
		all[n] = s
	}
	for n, s := range file.MCPServers {
		all[n] = s
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]ServerConfig, 0, len(names))
	for _, n := range names {
		sc, err := all[n].config(n)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: server %q: %v", ErrConfig, path, n, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

func (p projectServer) config(name string) (ServerConfig, error) {
	sc := ServerConfig{Name: name}
	typ := strings.ToLower(p.Type)
	if typ == "" {
		typ = "stdio"
		if p.Command == "" && p.URL != "" {
			typ = "http"
		}
	}
	switch typ {
	case "stdio":
		if p.Command == "" || p.URL != "" || len(p.Headers) > 0 {
			return sc, fmt.Errorf("a stdio server needs a command (and no url or headers)")
		}
		sc.Command, sc.Args, sc.Env, sc.Dir = p.Command, p.Args, p.Env, p.Cwd
	case "http", "streamable-http", "streamablehttp", "sse":
		if p.URL == "" || p.Command != "" || len(p.Args) > 0 || len(p.Env) > 0 {
			return sc, fmt.Errorf("an %s server needs a url (and no command, args or env)", typ)
		}
		sc.URL, sc.Headers, sc.SSE = p.URL, p.Headers, typ == "sse"
	default:
		return sc, fmt.Errorf("type %q: use stdio, http or sse", p.Type)
	}
	return sc, sc.validate()
}
