package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/reinhq/rein/mcp"
)

// mcpConfig is the [mcp] section of the config file:
//
//	[mcp.servers.fs]
//	command = "npx"
//	args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
//	disabled = ["write_file"]
//
//	[mcp.servers.docs]
//	url = "https://example.com/mcp"
//	headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
//	lazy = true
//
//	[mcp.servers.docs.oauth] # optional: every HTTP server may use OAuth
//	client_id = "pre-registered-id"
//	client_secret = "${DOCS_SECRET}"
//	grant = "client_credentials" # or authorization_code (the default)
//
// Servers also come from the workspace's .mcp.json (the project file other
// MCP clients read) unless project_file = false, and from --mcp flags.
// When two sources name the same server, --mcp wins over the config file,
// and the config file over .mcp.json: a project file never replaces a
// server the user configured.
type mcpConfig struct {
	Servers map[string]mcpServerConfig `toml:"servers"`
	// ProjectFile, when false, leaves the workspace's .mcp.json unread.
	ProjectFile *bool `toml:"project_file"`
}

// mcpServerConfig is one [mcp.servers.NAME] table. Values may hold ${VAR}
// templates, resolved when the server is connected.
type mcpServerConfig struct {
	Command     string            `toml:"command"`
	Args        []string          `toml:"args"`
	Dir         string            `toml:"dir"`
	Env         map[string]string `toml:"env"`
	InheritEnv  bool              `toml:"inherit_env"`
	URL         string            `toml:"url"`
	Transport   string            `toml:"transport"` // "http" (default for a URL) or "sse"
	Headers     map[string]string `toml:"headers"`
	Enabled     []string          `toml:"enabled"`
	Disabled    []string          `toml:"disabled"`
	Lazy        bool              `toml:"lazy"`
	HostOnly    bool              `toml:"host_only"`
	Timeout     string            `toml:"timeout"`      // connect timeout, a Go duration
	CallTimeout string            `toml:"call_timeout"` // per call, a Go duration
	OAuth       map[string]string `toml:"oauth"`        // see oauthOptions
}

// registerMCPFlag adds the repeatable --mcp flag to a command's flags.
func registerMCPFlag(fl *pflag.FlagSet, dst *[]string) {
	fl.StringArrayVar(dst, "mcp", nil, "an MCP server as 'NAME=COMMAND ARGS…' or 'NAME=https://… [client_id=ID] [client_secret=${VAR}] [grant=client_credentials] [client_metadata_url=URL] [redirect_url=URL] [transport=sse] [header=NAME:VALUE]' (repeatable)")
}

// loadMCPConfig reads the [mcp] section of the config file at path (the
// default config file when empty); a missing file is no servers.
func loadMCPConfig(path string) (*mcpConfig, error) {
	if path == "" {
		path = filepath.Join(configDir(), "config.toml")
	}
	var file struct {
		MCP mcpConfig `toml:"mcp"`
	}
	_, err := toml.DecodeFile(path, &file)
	if errors.Is(err, fs.ErrNotExist) {
		return &mcpConfig{}, nil
	}
	if err != nil {
		return nil, usageErrorf("config file %s: %v; fix the [mcp] section", path, err)
	}
	return &file.MCP, nil
}

// parseMCPFlag parses one --mcp value: NAME=COMMAND ARGS… split into words
// as a shell would (quotes and backslashes, no expansion), or NAME=URL for
// a remote server, optionally followed by KEY=VALUE options (see
// urlOption).
func parseMCPFlag(v string) (mcp.ServerConfig, error) {
	name, rest, ok := strings.Cut(v, "=")
	name, rest = strings.TrimSpace(name), strings.TrimSpace(rest)
	if !ok || name == "" || rest == "" {
		return mcp.ServerConfig{}, usageErrorf("--mcp %q: want NAME=COMMAND ARGS… or NAME=URL", v)
	}
	words, err := splitWords(rest)
	if err != nil {
		return mcp.ServerConfig{}, usageErrorf("--mcp %q: %v", v, err)
	}
	if !strings.HasPrefix(words[0], "http://") && !strings.HasPrefix(words[0], "https://") {
		return mcp.ServerConfig{Name: name, Command: words[0], Args: words[1:]}, nil
	}
	sc := mcp.ServerConfig{Name: name, URL: words[0]}
	for _, w := range words[1:] {
		if err := urlOption(&sc, w); err != nil {
			return mcp.ServerConfig{}, usageErrorf("--mcp %q: %v", v, err)
		}
	}
	if sc.SSE && sc.OAuth != nil {
		return mcp.ServerConfig{}, usageErrorf("--mcp %q: OAuth needs the streamable HTTP transport, not transport=sse", v)
	}
	return sc, nil
}

// urlOptions are the options of a --mcp URL server.
const urlOptions = "transport, header, " + oauthOptions

// urlOption applies one KEY=VALUE option of a --mcp URL server.
func urlOption(sc *mcp.ServerConfig, w string) error {
	key, val, ok := strings.Cut(w, "=")
	if !ok || val == "" {
		return fmt.Errorf("%q: a URL server takes KEY=VALUE options: %s", w, urlOptions)
	}
	if sc.OAuth == nil {
		sc.OAuth = &mcp.OAuthConfig{}
	}
	if ok, err := oauthOption(sc.OAuth, key, val); ok || err != nil {
		return err
	}
	if *sc.OAuth == (mcp.OAuthConfig{}) {
		sc.OAuth = nil
	}
	switch key {
	case "transport":
		switch val {
		case "http", "streamable-http":
		case "sse":
			sc.SSE = true
		default:
			return fmt.Errorf("transport %q: use http or sse", val)
		}
	case "header":
		k, hv, ok := strings.Cut(val, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("header %q: want header=NAME:VALUE", val)
		}
		if sc.Headers == nil {
			sc.Headers = map[string]string{}
		}
		sc.Headers[strings.TrimSpace(k)] = strings.TrimSpace(hv)
	default:
		return fmt.Errorf("unknown option %q: use %s", key, urlOptions)
	}
	return nil
}

// splitWords splits s into words the way a POSIX shell does, with single
// and double quotes and backslash escapes, but no expansion of any kind.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("a trailing backslash escapes nothing")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			closed := false
			for ; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("unclosed double quote")
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}

// serverConfig converts one config-file table.
func (c *mcpServerConfig) serverConfig(name string) (mcp.ServerConfig, error) {
	sc := mcp.ServerConfig{Name: name, Command: c.Command, Args: c.Args, Dir: c.Dir, Env: c.Env, InheritEnv: c.InheritEnv,
		URL: c.URL, Headers: c.Headers, Enabled: c.Enabled, Disabled: c.Disabled, Lazy: c.Lazy, HostOnly: c.HostOnly}
	switch c.Transport {
	case "", "http", "streamable-http":
	case "sse":
		sc.SSE = true
	default:
		return sc, usageErrorf("[mcp.servers.%s] transport %q: use http or sse", name, c.Transport)
	}
	for _, d := range []struct {
		s   string
		dst *time.Duration
		key string
	}{{c.Timeout, &sc.ConnectTimeout, "timeout"}, {c.CallTimeout, &sc.CallTimeout, "call_timeout"}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil || v < 0 {
			return sc, usageErrorf("[mcp.servers.%s] %s %q: want a duration such as 30s", name, d.key, d.s)
		}
		*d.dst = v
	}
	if c.OAuth != nil {
		o, err := oauthTable(name, c.OAuth)
		if err != nil {
			return sc, err
		}
		sc.OAuth = o
	}
	return sc, nil
}

// mcpServers merges the servers of the project file (lowest), the config
// file (by name) and --mcp values (in order, highest); a server of a
// higher source replaces one of the same name.
func mcpServers(cfg *mcpConfig, project []mcp.ServerConfig, flags []string) ([]mcp.ServerConfig, error) {
	var out []mcp.ServerConfig
	index := map[string]int{}
	put := func(sc mcp.ServerConfig, replace bool) {
		if i, ok := index[sc.Name]; ok {
			if replace {
				out[i] = sc
			}
			return
		}
		index[sc.Name] = len(out)
		out = append(out, sc)
	}
	if cfg != nil {
		names := make([]string, 0, len(cfg.Servers))
		for n := range cfg.Servers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := cfg.Servers[n]
			sc, err := c.serverConfig(n)
			if err != nil {
				return nil, err
			}
			put(sc, true)
		}
	}
	for _, sc := range project {
		put(sc, false)
	}
	for _, f := range flags {
		sc, err := parseMCPFlag(f)
		if err != nil {
			return nil, err
		}
		put(sc, true)
	}
	return out, nil
}

// allMCPServers reads every source of servers for the workspace root: the
// config file, root's .mcp.json (unless the config turns it off) and
// flags. Every streamable-HTTP server may use OAuth: one that asks for it
// gets the token 'rein mcp login' saved, whatever source named it.
func (a *app) allMCPServers(root string, flags []string) ([]mcp.ServerConfig, error) {
	cfg, err := loadMCPConfig(a.configPath)
	if err != nil {
		return nil, err
	}
	var project []mcp.ServerConfig
	if root != "" && (cfg.ProjectFile == nil || *cfg.ProjectFile) {
		if project, err = mcp.ReadProjectFile(filepath.Join(root, mcp.ProjectFileName)); err != nil {
			return nil, usageErrorf("%v; fix the file or set project_file = false under [mcp] in the config", err)
		}
	}
	servers, err := mcpServers(cfg, project, flags)
	if err != nil {
		return nil, err
	}
	for i := range servers {
		if servers[i].URL != "" && !servers[i].SSE && servers[i].OAuth == nil {
			servers[i].OAuth = &mcp.OAuthConfig{}
		}
	}
	return servers, nil
}
