package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/skill"
	"github.com/reinhq/rein/tool"
)

func init() {
	extraCommands = append(extraCommands, (*app).skillsCommand, (*app).permissionsCommand)
}

func (a *app) skillsCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "skills",
		Short: "Show the skills rein offers the model in a workspace",
		Long: `A skill is a folder holding a SKILL.md: YAML front matter with a name, a
description and optionally allowed-tools, then instructions. The model sees
each skill's name and description in its system prompt and loads a skill's
instructions with the skill tool when a task calls for it; a file of the
skill's folder is read only when the model asks for it. A prompt of the form
/NAME [REQUEST] starts the skill NAME for that turn. While a skill is active,
the calls its allowed-tools cover run without asking, unless a deny or ask
rule covers them. At most 8 skills are active at once.

rein reads skills from, highest priority first: .rein/skills and
.claude/skills of the workspace, skills under rein's config directory,
~/.claude/skills, then the skills folder of each plugin under .rein/plugins
and .claude/plugins. A skill whose name an earlier folder already has is
skipped as shadowed.`,
	}
	root.AddCommand(a.skillsListCommand())
	return root
}

// skillRow is one skill in 'rein skills list --json'.
type skillRow struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	Source         string   `json:"source"`
	Path           string   `json:"path"`
	AllowedTools   []string `json:"allowed_tools,omitempty"`
	ModelInvocable bool     `json:"model_invocable"`
	// Unusable are allowed-tools rein cannot apply, with why.
	Unusable []string `json:"unusable_allowed_tools,omitempty"`
}

// rootRow is one folder searched, in 'rein skills list --json'.
type rootRow struct {
	Dir    string `json:"dir"`
	Source string `json:"source"`
	Exists bool   `json:"exists"`
}

type skippedRow struct {
	Path   string `json:"path"`
	Source string `json:"source"`
	Reason string `json:"reason"`
}

func (a *app) skillsListCommand() *cobra.Command {
	var cwd string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the skills found, where each comes from, and what was skipped and why",
		Example: `  rein skills list
  rein skills list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			roots := skill.Roots(&skill.RootsRequest{Workspace: root, UserConfig: configDir(), Home: homeDir(), Plugins: command.PluginDirs(root, true)})
			lib := skill.Discover(roots)
			var out struct {
				Roots   []rootRow    `json:"roots"`
				Skills  []skillRow   `json:"skills"`
				Skipped []skippedRow `json:"skipped"`
			}
			for _, r := range roots {
				st, err := os.Stat(r.Dir)
				out.Roots = append(out.Roots, rootRow{Dir: r.Dir, Source: r.Source, Exists: err == nil && st.IsDir()})
			}
			out.Skills = []skillRow{}
			for _, s := range lib.Skills() {
				row := skillRow{Name: s.Name, Description: s.Description, Source: s.Source, Path: s.Path(), AllowedTools: s.AllowedTools, ModelInvocable: s.ModelInvocable}
				for _, spec := range s.AllowedTools {
					if _, err := parsePermission(spec, tool.Allow); err != nil {
						row.Unusable = append(row.Unusable, spec+": "+err.Error())
					}
				}
				out.Skills = append(out.Skills, row)
			}
			out.Skipped = []skippedRow{}
			for _, s := range lib.Skipped() {
				out.Skipped = append(out.Skipped, skippedRow(s))
			}
			w := cmd.OutOrStdout()
			if jsonOut {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			writeSkillsTable(w, out.Roots, out.Skills, out.Skipped)
			return nil
		},
	}
	cmd.Flags().StringVarP(&cwd, "cwd", "C", "", "the workspace directory (default the current directory)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON: the folders searched, the skills and the skipped folders")
	return cmd
}

func writeSkillsTable(w io.Writer, roots []rootRow, skills []skillRow, skipped []skippedRow) {
	fmt.Fprintln(w, "Folders searched, highest priority first:")
	for _, r := range roots {
		mark := "  (absent)"
		if r.Exists {
			mark = ""
		}
		fmt.Fprintf(w, "  %-18s %s%s\n", r.Source, r.Dir, mark)
	}
	fmt.Fprintln(w)
	if len(skills) == 0 {
		fmt.Fprintln(w, "No skills: add a folder with a SKILL.md to .rein/skills or .claude/skills.")
	}
	for _, s := range skills {
		fmt.Fprintf(w, "%s — %s\n  from %s: %s\n", s.Name, s.Description, s.Source, s.Path)
		if len(s.AllowedTools) > 0 {
			fmt.Fprintf(w, "  allowed tools: %s\n", strings.Join(s.AllowedTools, ", "))
		}
		if !s.ModelInvocable {
			fmt.Fprintln(w, "  started by the user only (/"+s.Name+"); not in the model's catalog")
		}
		for _, u := range s.Unusable {
			fmt.Fprintln(w, "  not applied: "+u)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Skipped:")
		for _, s := range skipped {
			fmt.Fprintf(w, "  %s: %s\n", s.Path, s.Reason)
		}
	}
}

func (a *app) permissionsCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "permissions",
		Short: "Show the permission rules rein applies in a workspace",
		Long: `Permission rules decide, before --approve's default, whether a call runs:
permissions.allow, permissions.ask and permissions.deny lists in the settings
format ('Bash(go test:*)', 'Read(./secrets/**)', 'Edit', mcp__SERVER__TOOL),
read from ~/.claude/settings.json, settings.json in rein's config directory,
and the workspace's .claude/settings.json, .claude/settings.local.json,
.rein/settings.json and .rein/settings.local.json, then --deny and --allow.
Whatever the file, a deny rule wins over an ask rule, and an ask rule over
an allow rule.`,
	}
	root.AddCommand(a.permissionsListCommand())
	return root
}

func (a *app) permissionsListCommand() *cobra.Command {
	var cwd string
	var jsonOut bool
	var flags permissionFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the effective permission rules and the file each comes from",
		Example: `  rein permissions list
  rein permissions list --allow 'Bash(go test:*)' --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := workspace(cwd)
			if err != nil {
				return err
			}
			entries, err := permissionEntries(root, &flags)
			if err != nil {
				return err
			}
			// Deny rules first, then ask, then allow: the order they are
			// applied in, whatever file they come from.
			var sorted []permissionEntry
			for _, v := range []tool.Verdict{tool.Deny, tool.Ask, tool.Allow} {
				for _, e := range entries {
					if e.Verdict == v {
						sorted = append(sorted, e)
					}
				}
			}
			w := cmd.OutOrStdout()
			if jsonOut {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Files []hookFileRow     `json:"files"`
					Rules []permissionEntry `json:"rules"`
				}{permissionFileRows(root), append([]permissionEntry{}, sorted...)})
			}
			writePermissionsTable(w, root, sorted)
			return nil
		},
	}
	cmd.Flags().StringVarP(&cwd, "cwd", "C", "", "the workspace directory (default the current directory)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON: the settings files and every rule with its source")
	flags.register(cmd.Flags())
	return cmd
}

func permissionFileRows(root string) []hookFileRow {
	var rows []hookFileRow
	for _, f := range permissionFiles(root) {
		_, err := os.Stat(f)
		rows = append(rows, hookFileRow{Path: f, Exists: err == nil})
	}
	return rows
}

func writePermissionsTable(w io.Writer, root string, entries []permissionEntry) {
	writeFilesRead(w, permissionFileRows(root))
	fmt.Fprintln(w)
	if len(entries) == 0 {
		fmt.Fprintln(w, "No rules: --approve alone decides.")
		return
	}
	fmt.Fprintln(w, "Rules, in the order they apply (deny, then ask, then allow):")
	for _, e := range entries {
		line := fmt.Sprintf("  %-5s %-28s %s", e.Verdict, e.Spec, e.Source)
		if e.Skipped != "" {
			line += "  (skipped: " + e.Skipped + ")"
		}
		fmt.Fprintln(w, line)
	}
}
