// Package skill reads what a team keeps to instruct its agents: skills in
// the Agent Skills format and memory files (AGENTS.md, CLAUDE.md).
//
// A skill is a folder holding a SKILL.md: YAML front matter with a name,
// a description and optionally allowed-tools, then Markdown instructions.
// Files beside it (references, templates, scripts) belong to the skill.
//
//	---
//	name: release-notes
//	description: Writes release notes from the git log; use when asked for a changelog.
//	allowed-tools: Bash(git log:*), Read
//	---
//	Run git log since the last tag, group the commits by area, ...
//
// Discovery reads only front matter (Discover, in the priority of Roots);
// the model sees the skills' names and descriptions in a catalog
// (Library.Catalog) that is the same bytes at every step, so the prompt
// cache holds. Activating a skill — the model through the skill tool
// (Activator.Tool), or the host (Activator.Activate) — loads its body;
// a file of its folder is read only when asked for (progressive
// disclosure). Skills are deactivated the same ways; the active ones are
// capped, and every activation and deactivation is a record for the
// session log (Activator.Records) that observers see.
//
// Memory files are loaded by LoadMemory, in the order and precedence its
// Memory type describes, with @path imports; Memory.Notices tells the
// model of a file that changed while the session runs.
//
// Quick start:
//
//	lib := skill.Discover(skill.Roots(&skill.RootsRequest{Workspace: dir}))
//	act := skill.NewActivator(lib, nil)
//	t, _ := act.Tool()
//	a, _ := agent.New(&agent.Options{
//		Model:          m,
//		Tools:          []tool.Tool{t},
//		SystemSections: []agent.SystemSection{{Kind: agent.SectionSkills, Name: "catalog", Text: lib.Catalog()}},
//		Records:        func() []session.Payload { return act.Records(sessionID) },
//	})
package skill
