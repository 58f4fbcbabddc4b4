package main

import "github.com/spf13/cobra"

func init() { extraCommands = append(extraCommands, (*app).configHelp) }

// configHelp is the help topic 'rein help config'.
func (a *app) configHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "The config file, environment variables and where sessions are kept",
		Long: `rein reads $XDG_CONFIG_HOME/rein/config.toml (default ~/.config/rein/config.toml,
or the file named by --config). Flags override environment variables, which
override the file.

  model     = "anthropic/claude-sonnet-4-5"   # PROVIDER/NAME         env REIN_MODEL
  store     = "sqlite:"                       # sqlite:PATH | jsonl:DIR | postgres://URL | mem:   env REIN_STORE
  approve   = "ask"                           # auto | ask | deny     env REIN_APPROVE
  tools     = ["read", "ls", "grep", "shell"] #                       env REIN_TOOLS (comma-separated)
  max_steps = 50

  [providers.openai-compatible]
  base_url = "http://localhost:8000/v1"
  key_env  = "MY_SERVER_KEY"   # the variable that holds the key; keys never go in the file

Keys: ANTHROPIC_API_KEY, OPENAI_API_KEY (also for openai-responses),
DEEPSEEK_API_KEY, OPENROUTER_API_KEY. Base URLs: ANTHROPIC_BASE_URL,
OPENAI_BASE_URL, or --base-url. ollama and openai-compatible need no key.

State lives under $XDG_STATE_HOME/rein (default ~/.local/state/rein):
sessions.db, the default store. Long tool outputs are spilled to
.rein/spill in the workspace, where the model can read them.`,
	}
}
