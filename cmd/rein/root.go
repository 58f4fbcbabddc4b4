package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/reinhq/rein/tool/exec"
	"github.com/spf13/cobra"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = ""

// app holds what every command shares: the standard streams and the
// environment, injectable for tests.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	configPath string
	storeSpec  string
	cfg        *config
	secrets    *scrubber // never nil once run has built the app
	// outTTY is stdout's file when it is a terminal (nil otherwise);
	// errTTY reports whether stderr is one.
	outTTY *os.File
	errTTY bool
	// newSandbox makes the shell's sandbox for --sandbox auto; nil means
	// exec.NewSandbox.
	newSandbox func(*exec.SandboxOptions) (exec.Context, error)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "rein",
		Short: "An agent harness: a language model in a loop with tools, on a log you can replay",
		Long: `rein runs a language model in a loop with tools. Every step is written to a
session log that can be resumed, forked, exported and replayed.

Start with 'rein run "PROMPT"' (needs an API key or a local server) or
'rein replay examples/sessions/hello.ndjson' (offline).`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(a.configPath)
			if err != nil {
				return err
			}
			a.cfg = cfg
			if a.secrets == nil {
				a.secrets = newScrubber()
			}
			a.learnSecrets()
			return nil
		},
	}
	root.SetVersionTemplate("rein {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%v\nRun '%s --help' for usage.", err, cmd.CommandPath())
	})
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "config file (default $XDG_CONFIG_HOME/rein/config.toml)")
	root.PersistentFlags().StringVar(&a.storeSpec, "store", "", "session store: sqlite:PATH | jsonl:DIR | postgres://URL | mem: (default sqlite: under $XDG_STATE_HOME/rein)")
	completeStore(root)
	root.AddCommand(a.versionCommand())
	for _, add := range extraCommands {
		root.AddCommand(add(a))
	}
	return root
}

// extraCommands are the subcommands each file registers in its init.
var extraCommands []func(*app) *cobra.Command

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rein's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "rein", versionString())
			return nil
		},
	}
}

func versionString() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

// isFlagError reports whether err came from cobra's argument checks.
func isFlagError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "accepts ") ||
		strings.Contains(msg, "requires at least") || strings.Contains(msg, "unknown flag")
}
