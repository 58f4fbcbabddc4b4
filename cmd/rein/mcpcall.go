package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/mcp"
)

func (a *app) mcpCallCommand() *cobra.Command {
	var flags []string
	var cwd string
	var asJSON bool
	var timeout time.Duration
	call := &cobra.Command{
		Use:   "call NAME TOOL [ARGUMENTS-JSON]",
		Short: "Call one tool of an MCP server and print its result; exit 1 when the tool reports an error",
		Long: `Call one tool of an MCP server directly, without a model: TOOL is the
server's own name for it (see 'rein mcp list -v'), ARGUMENTS-JSON an object
such as '{"path": "README.md"}'. On a terminal, a server that asks for input
or an OAuth login asks you; elsewhere it is declined or told to run
'rein mcp login'.`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			var params json.RawMessage
			if len(args) == 3 {
				if !json.Valid([]byte(args[2])) {
					return usageErrorf("ARGUMENTS-JSON %q is not JSON; give an object such as '{\"key\": \"value\"}'", args[2])
				}
				params = json.RawMessage(args[2])
			}
			servers, err := a.allMCPServers(root, flags)
			if err != nil {
				return err
			}
			one, err := pickServer(servers, args[0])
			if err != nil {
				return err
			}
			host := &mcpHost{root: root, out: cmd.ErrOrStderr()}
			if isTerminal(os.Stdin) {
				host.atTerminal(&ttyApprover{out: cmd.ErrOrStderr()})
			}
			m, err := newMCPManager(one, host)
			if err != nil {
				return err
			}
			defer m.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			res, err := m.Call(ctx, args[0], args[1], params)
			if errors.Is(err, mcp.ErrUnknownTool) {
				return usageErrorf("%v; see 'rein mcp list -v'", err)
			}
			if err != nil {
				return &codeError{code: exitError, err: err}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), res.TextOf())
			}
			if res.IsError {
				return &codeError{code: exitError, err: fmt.Errorf("the tool %s of %s reported an error", args[1], args[0])}
			}
			return nil
		},
	}
	registerMCPFlag(call.Flags(), &flags)
	call.Flags().StringVarP(&cwd, "cwd", "C", "", "the workspace: its .mcp.json is read and it is the servers' root (default the current directory)")
	call.Flags().BoolVar(&asJSON, "json", false, "print the whole result as JSON")
	call.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long the call may take")
	return call
}
