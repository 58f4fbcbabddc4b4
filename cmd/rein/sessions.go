package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func init() { extraCommands = append(extraCommands, (*app).sessionsCommand) }

func (a *app) sessionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sessions",
		Aliases: []string{"session"},
		Short:   "List, show, export, fork, follow and remove recorded sessions",
		Long: `Sessions are kept in the store named by --store (default: an SQLite
database under $XDG_STATE_HOME/rein). Each is an append-only log of events.`,
		Args: exactArgs(0, "a subcommand: list, show, export, rm, fork or tail"),
	}
	cmd.AddCommand(a.sessionsList(), a.sessionsShow(), a.sessionsExport(), a.sessionsRm(), a.sessionsFork(), a.sessionsTail())
	return cmd
}

// withStore opens the store for the duration of fn.
func (a *app) withStore(fn func(st session.Store) error) error {
	st, err := a.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// completeSessions completes session ids from the store.
func (a *app) completeSessions(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	a.withStore(func(st session.Store) error {
		infos, err := st.List(cmd.Context())
		for _, in := range infos {
			if strings.HasPrefix(string(in.ID), toComplete) {
				ids = append(ids, string(in.ID))
			}
		}
		return err
	})
	return ids, cobra.ShellCompDirectiveNoFileComp
}

// ago renders a time relative to now for listings.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

func (a *app) sessionsShow() *cobra.Command {
	return &cobra.Command{
		Use:               "show ID",
		Short:             "Show a session as a readable transcript with its totals",
		Args:              exactArgs(1, "a session ID"),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(func(st session.Store) error {
				info, err := findSession(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				events, err := collect(st.Events(cmd.Context(), info.ID, 0))
				if err != nil {
					return err
				}
				w := bufio.NewWriter(a.stdout)
				fmt.Fprintf(w, "session %s\n", info.ID)
				if info.WorkDir != "" {
					fmt.Fprintf(w, "workdir %s\n", info.WorkDir)
				}
				if info.Parent != "" {
					fmt.Fprintf(w, "forked from %s\n", info.Parent)
				}
				fmt.Fprintf(w, "created %s, %s\n\n", info.Created.Local().Format(time.DateTime), plural(int(info.LastSeq), "event"))
				writeMarkdown(w, events)
				var u llm.Usage
				turns := 0
				for _, ev := range events {
					switch d := ev.Data.(type) {
					case *session.AssistantMessage:
						u.Add(d.Usage)
					case *session.TurnEnd:
						turns++
					}
				}
				fmt.Fprintf(w, "\n---\n%s; tokens: %d in, %d out, %d cache read, %d cache write\n", plural(turns, "turn"), u.Input, u.Output, u.CacheRead, u.CacheWrite)
				if err := writeChildren(cmd.Context(), w, st, events, ""); err != nil {
					return err
				}
				return w.Flush()
			})
		},
	}
}

func (a *app) sessionsExport() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:               "export ID",
		Short:             "Write a session to stdout as NDJSON events or Markdown",
		Args:              exactArgs(1, "a session ID"),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "ndjson" && format != "markdown" {
				return usageErrorf("--format %q: use ndjson or markdown", format)
			}
			return a.withStore(func(st session.Store) error {
				info, err := findSession(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				w := bufio.NewWriter(a.stdout)
				if format == "ndjson" {
					if err := session.Export(cmd.Context(), st, info.ID, w); err != nil {
						return err
					}
					return w.Flush()
				}
				events, err := collect(st.Events(cmd.Context(), info.ID, 0))
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "# Session %s\n\n", info.ID)
				writeMarkdown(w, events)
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "ndjson", "ndjson (the event log, for 'rein replay' and import) or markdown (a transcript)")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"ndjson", "markdown"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) sessionsRm() *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID...",
		Short: "Delete sessions by id or unique prefix",
		Long: `Rm deletes the sessions named, by id or a unique prefix of it. Every id is
checked first: when one is unknown or ambiguous, nothing is deleted.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("rein sessions rm needs one or more session IDs; 'rein sessions list' shows them")
			}
			return nil
		},
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(func(st session.Store) error {
				var ids []session.ID
				for _, id := range args {
					info, err := findSession(cmd.Context(), st, id)
					if err != nil {
						return err
					}
					if !slices.Contains(ids, info.ID) {
						ids = append(ids, info.ID)
					}
				}
				for _, id := range ids {
					if err := st.Delete(cmd.Context(), id); err != nil {
						return fmt.Errorf("delete %s: %w", id, err)
					}
					fmt.Fprintf(a.stderr, "deleted %s\n", id)
				}
				return nil
			})
		},
	}
}

func (a *app) sessionsFork() *cobra.Command {
	return &cobra.Command{
		Use:   "fork ID[@SEQ]",
		Short: "Copy a session (up to event SEQ) into a new one and print its id",
		Long: `Fork copies a session's events, all of them or up to SEQ, into a new session
and prints the new id. A turn cut open at SEQ is closed by a recorded repair.
Continue the fork with 'rein run --session NEW_ID' or 'rein chat --session NEW_ID'.`,
		Args:              exactArgs(1, "ID or ID@SEQ"),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(func(st session.Store) error {
				id, err := forkSession(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintln(a.stdout, id)
				return nil
			})
		},
	}
}

func (a *app) sessionsTail() *cobra.Command {
	var follow, jsonOut bool
	cmd := &cobra.Command{
		Use:               "tail [-f] ID",
		Short:             "Print a session's events, and with -f follow new ones as they are written",
		Args:              exactArgs(1, "a session ID"),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(func(st session.Store) error {
				info, err := findSession(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				seq := st.Events(cmd.Context(), info.ID, 0)
				if follow {
					seq = session.Follow(cmd.Context(), st, info.ID, 0)
				}
				w := bufio.NewWriter(a.stdout)
				var buf []byte
				for ev, err := range seq {
					if err != nil {
						return err
					}
					if jsonOut {
						buf, err = session.AppendEventJSON(buf[:0], ev)
						if err != nil {
							return err
						}
						w.Write(append(buf, '\n'))
					} else {
						fmt.Fprintf(w, "%5d %s %-18s %s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Data.EventType(), eventSummary(ev))
					}
					if err := w.Flush(); err != nil {
						return err
					}
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they are appended (Ctrl-C to stop)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print events as NDJSON")
	return cmd
}

// eventSummary is a one-line description of an event.
func eventSummary(ev session.Event) string {
	switch d := ev.Data.(type) {
	case *session.TurnStart:
		return d.Trigger
	case *session.TurnEnd:
		s := string(d.Reason)
		if d.Cause != "" {
			s += " (" + d.Cause + ")"
		}
		if d.Message != "" {
			s += ": " + d.Message
		}
		return shorten(s, 100)
	case *session.StepStart:
		return fmt.Sprintf("step %d", d.Step)
	case *session.StepEnd:
		return fmt.Sprintf("step %d %s, %d in / %d out", d.Step, d.Finish, d.Usage.PromptTokens(), d.Usage.Output)
	case *session.UserMessage:
		return shorten(partsText(d.Parts), 100)
	case *session.AssistantMessage:
		s := partsText(d.Parts)
		for _, p := range d.Parts {
			if c, ok := p.(*llm.ToolCall); ok {
				s += " [" + c.Name + "]"
			}
		}
		return shorten(s, 100)
	case *session.ToolCall:
		return d.Name + " " + shortArgs(d.Args)
	case *session.ToolResult:
		s := d.Outcome
		if d.IsError {
			s += " error"
		}
		return shorten(fmt.Sprintf("%s %s %s", d.Name, s, firstLine(resultText(d.Parts))), 100)
	case *session.RequestHeader:
		return d.Provider + "/" + d.Model + " " + d.Reason
	case *session.HookDecision:
		return shorten(d.Point+" "+d.Decision+" "+d.Reason, 100)
	case *session.Retry:
		return fmt.Sprintf("%s attempt %d after %s", d.Kind, d.Attempt, d.Delay)
	case *session.Repair:
		return d.Kind + " " + d.Detail
	}
	return ""
}

// writeMarkdown renders events as a Markdown transcript.
func writeMarkdown(w io.Writer, events []session.Event) {
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *session.UserMessage:
			fmt.Fprintf(w, "## User\n\n%s\n\n", strings.TrimSpace(partsText(d.Parts)))
		case *session.SteeringMessage:
			fmt.Fprintf(w, "## User (steer)\n\n%s\n\n", strings.TrimSpace(partsText(d.Parts)))
		case *session.AssistantMessage:
			text := strings.TrimSpace(partsText(d.Parts))
			if text != "" {
				fmt.Fprintf(w, "## Assistant\n\n%s\n\n", text)
			}
		case *session.ToolCall:
			fmt.Fprintf(w, "**Tool call** `%s` `%s`\n\n", d.Name, shortArgs(d.Args))
		case *session.ToolResult:
			status := "result"
			if d.IsError {
				status = "error"
			}
			text := resultText(d.Parts)
			if len(text) > 2000 {
				text = text[:2000] + "\n… (cut)"
			}
			fmt.Fprintf(w, "**Tool %s** `%s` (%s)\n\n```\n%s\n```\n\n", status, d.Name, d.Duration.Round(time.Millisecond), strings.TrimRight(text, "\n"))
		case *session.TurnEnd:
			if d.Reason != session.EndCompleted {
				fmt.Fprintf(w, "_Turn ended: %s_\n\n", eventSummary(ev))
			}
		}
	}
}
