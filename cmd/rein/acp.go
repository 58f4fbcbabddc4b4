package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/acp"
	"github.com/reinhq/rein/llm"
)

func init() { extraCommands = append(extraCommands, (*app).acpCommand) }

func (a *app) acpCommand() *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "acp [flags]",
		Short: "Serve rein to a code editor over the Agent Client Protocol (stdio)",
		Long: `acp runs rein as an Agent Client Protocol agent: the editor starts it, speaks
JSON-RPC on its stdin and stdout, and shows the answers, tool calls, diffs and
plan as they happen. Logs go to stderr; stdout carries the protocol only.

Each editor session is a rein session in the editor's project directory, kept
in the store like any other (resume it in the editor, or with 'rein run
--session'). The model, tools, store and limits come from the flags and the
config file as for 'rein run'; approval defaults to ask, and the editor asks.`,
		Example: `  rein acp --model anthropic/claude-sonnet-4-5
  rein acp --model ollama/qwen3 --approve auto --max-steps 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serveACP(cmd.Context(), f)
		},
	}
	f.register(cmd)
	cmd.Flags().Lookup("approve").Usage = "approval of writes and commands: auto, ask or deny (default ask: the editor asks)"
	// The editor chooses the session and the directory.
	for _, n := range []string{"session", "fork", "cwd"} {
		cmd.Flags().MarkHidden(n)
	}
	return cmd
}

// serveACP serves the editor on stdin and stdout until it disconnects.
func (a *app) serveACP(ctx context.Context, f *agentFlags) error {
	for flag, v := range map[string]string{"session": f.session, "fork": f.fork, "cwd": f.cwd} {
		if v != "" {
			return usageErrorf("rein acp: --%s is chosen by the editor (its session and project directory); leave it out", flag)
		}
	}
	// A model that cannot be resolved is said once, at start, on stderr,
	// where the editor shows why its agent exited.
	spec := f.model
	if spec == "" {
		spec = a.getenv("REIN_MODEL")
	}
	t, err := resolveTarget(spec, f.baseURL, a.cfg, a.getenv)
	if err != nil {
		return err
	}
	// The editor may switch between the catalog's models of the provider.
	var models []string
	for _, m := range llm.DefaultCatalog().All() {
		if m.Provider == t.provider.name {
			models = append(models, m.Provider+"/"+m.ID)
		}
	}
	srv, err := acp.New(&acp.Options{
		Name: "rein", Version: versionString(), Models: models,
		Logger: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		NewAgent: func(ctx context.Context, req *acp.AgentRequest) (*acp.Handle, error) {
			sf := *f
			sf.cwd = req.Cwd
			sf.session = string(req.Session)
			sf.existing = req.Session != ""
			sf.editorMCP = req.MCPServers
			sf.editorTools = req.ClientTools
			if req.Model != "" {
				sf.model = req.Model
			}
			s, err := a.build(ctx, &sf, req.Approver, true)
			if err != nil {
				return nil, err
			}
			return &acp.Handle{Agent: s.agent, RunHooks: s.runHooks, Close: s.Close, Model: s.target.String()}, nil
		},
	})
	if err != nil {
		return err
	}
	return srv.Serve(ctx, a.stdin, a.stdout)
}
