package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/llm"
)

func init() { extraCommands = append(extraCommands, (*app).modelsCommand) }

func (a *app) modelsCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the known models with context windows and prices",
		Long: `Models lists rein's model catalog: context window, largest output, and list
prices in US dollars per million tokens (input, output, cache read, cache
write). Use a row as --model PROVIDER/ID. Local and OpenAI-compatible servers
accept any model name they serve; they are not listed.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			all := llm.DefaultCatalog().All()
			if jsonOut {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(all)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tCONTEXT\tMAX OUT\t$IN/M\t$OUT/M\t$CACHE READ/M\t$CACHE WRITE/M\t")
			for _, m := range all {
				fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Provider, m.ID,
					tokens(m.ContextWindow), tokens(m.MaxOutput),
					price(m.Prices.Input), price(m.Prices.Output), price(m.Prices.CacheRead), price(m.Prices.CacheWrite5m))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the catalog as JSON")
	return cmd
}

func tokens(n int) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func price(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", p)
}
