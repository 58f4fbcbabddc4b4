package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// config is the file $XDG_CONFIG_HOME/rein/config.toml. Flags override it,
// and the environment overrides it where a variable exists.
type config struct {
	Model     string                    `toml:"model"`   // PROVIDER/NAME
	Store     string                    `toml:"store"`   // sqlite:PATH | jsonl:DIR | postgres://URL | mem:
	Approve   string                    `toml:"approve"` // auto | ask | deny
	Tools     []string                  `toml:"tools"`   // default tool set
	MaxSteps  int                       `toml:"max_steps"`
	Providers map[string]providerConfig `toml:"providers"` // by provider name

	path string // where it was read from, for messages
}

// providerConfig overrides a provider's endpoint or key variable.
type providerConfig struct {
	BaseURL string `toml:"base_url"`
	// KeyEnv names the environment variable holding the key; the key itself
	// never lives in the config file.
	KeyEnv string `toml:"key_env"`
}

// configDir is $XDG_CONFIG_HOME/rein, or ~/.config/rein.
func configDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "rein")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "rein-config")
	}
	return filepath.Join(home, ".config", "rein")
}

// stateDir is $XDG_STATE_HOME/rein, or ~/.local/state/rein.
func stateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "rein")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "rein-state")
	}
	return filepath.Join(home, ".local", "state", "rein")
}

// loadConfig reads the config file: path (--config), else the default
// one, which may be missing (an empty config); a --config file may not.
func loadConfig(path string) (*config, error) {
	given := path != ""
	if !given {
		path = filepath.Join(configDir(), "config.toml")
	}
	c := &config{path: path}
	md, err := toml.DecodeFile(path, c)
	if errors.Is(err, fs.ErrNotExist) {
		if given {
			return nil, usageErrorf("--config %s: no such file; give the path of an existing config file, or leave --config out to use %s", path, filepath.Join(configDir(), "config.toml"))
		}
		return c, nil
	}
	if err != nil {
		return nil, usageErrorf("config file %s: %v; fix the file or move it aside", path, err)
	}
	for _, k := range md.Undecoded() {
		// The [mcp] section is read by loadMCPConfig, [hooks] and
		// hooks_from by readHookConfig.
		if len(k) > 0 && (k[0] == "mcp" || k[0] == "hooks" || k[0] == "hooks_from") {
			continue
		}
		return nil, usageErrorf("config file %s: unknown key %q; see 'rein help config'", path, k.String())
	}
	return c, nil
}

// usageError is a configuration or usage mistake: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}
