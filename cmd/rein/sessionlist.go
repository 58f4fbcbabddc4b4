package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/session"
)

func (a *app) sessionsList() *cobra.Command {
	var (
		jsonOut bool
		all     bool
		limit   int
		cwd     string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's sessions, most recent first: title, age, turns, cost",
		Long: `List shows the sessions of the workspace (the current directory, or --cwd),
most recent first, with their title (the first prompt), age, turns and cost.
--all lists every session of the store, subagents' included, with its
workspace and parent.`,
		Args: exactArgs(0, "no arguments (filter with --cwd or --all)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageErrorf("--limit %d: give a number of sessions, or 0 for all", limit)
			}
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			if all {
				root = ""
			}
			return a.withStore(func(st session.Store) error {
				rows, more, err := listSessions(cmd, st, root, limit)
				if err != nil {
					return err
				}
				if jsonOut {
					return writeListJSON(a, rows)
				}
				a.writeList(rows, root)
				if more > 0 {
					fmt.Fprintf(a.stderr, "%s; --limit 0 shows all\n", plural(more, "more session"))
				}
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&jsonOut, "json", false, "print one JSON object a line: session, title, turns, cost_usd, events, workdir, parent, created, updated")
	fl.BoolVarP(&all, "all", "a", false, "list the sessions of every workspace, subagents' included")
	fl.IntVarP(&limit, "limit", "n", 20, "list at most N sessions (0 for all)")
	fl.StringVarP(&cwd, "cwd", "C", "", "the workspace whose sessions to list (default the current directory)")
	return cmd
}

// listSessions reads the sessions of workspace root ("" for all), most
// recent first, at most limit of them (0: all), and how many more there are.
func listSessions(cmd *cobra.Command, st session.Store, root string, limit int) ([]listing, int, error) {
	ctx := cmd.Context()
	infos, err := st.List(ctx)
	if err != nil {
		return nil, 0, err
	}
	if root != "" {
		infos = slices.DeleteFunc(infos, func(in session.Info) bool { return in.WorkDir != root })
	}
	slices.SortFunc(infos, func(x, y session.Info) int { return y.Updated.Compare(x.Updated) })
	more := 0
	if limit > 0 && len(infos) > limit {
		more = len(infos) - limit
		infos = infos[:limit]
	}
	rows := make([]listing, len(infos))
	for i := range infos {
		in := &infos[i]
		title, turns, cost, err := totals(ctx, st, in)
		if err != nil {
			return nil, 0, fmt.Errorf("session %s: %w", in.ID, err)
		}
		rows[i] = listing{Session: in.ID, Title: title, Turns: turns, Cost: cost, Events: in.LastSeq, WorkDir: in.WorkDir, Parent: in.Parent,
			Created: in.Created.UTC(), Updated: in.Updated.UTC()}
	}
	return rows, more, nil
}

func writeListJSON(a *app, rows []listing) error {
	enc := json.NewEncoder(a.stdout)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// writeList prints rows as a table; with every workspace's (root ""),
// with the workspace and parent of each.
func (a *app) writeList(rows []listing, root string) {
	if len(rows) == 0 {
		where := "this workspace (" + root + "); 'rein sessions list --all' lists every workspace's"
		if root == "" {
			where = a.storeShown()
		}
		fmt.Fprintf(a.stderr, "no sessions in %s; start one with 'rein run \"PROMPT\"' or 'rein chat'\n", where)
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	head := "ID\tAGE\tTURNS\tCOST\tTITLE"
	if root == "" {
		head += "\tWORKDIR\tPARENT"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%d\t$%.4f\t%s", r.Session, ago(r.Updated), r.Turns, r.Cost, r.Title)
		if root == "" {
			line += fmt.Sprintf("\t%s\t%s", r.WorkDir, r.Parent)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}
