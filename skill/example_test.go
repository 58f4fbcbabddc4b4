package skill_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/skill"
)

func Example() {
	dir, _ := os.MkdirTemp("", "skills")
	defer os.RemoveAll(dir)
	folder := filepath.Join(dir, ".claude", "skills", "changelog")
	os.MkdirAll(folder, 0o755)
	os.WriteFile(filepath.Join(folder, "SKILL.md"), []byte(`---
name: changelog
description: Writes release notes from the git log.
allowed-tools: Bash(git log:*)
---
Group the commits since the last tag by area.
`), 0o644)

	lib := skill.Discover(skill.Roots(&skill.RootsRequest{Workspace: dir}))
	fmt.Println(lib.Catalog())

	act := skill.NewActivator(lib, nil)
	ac, _ := act.Activate("session-1", "changelog", skill.ViaHost)
	fmt.Println(ac.Body)
	fmt.Println(ac.Skill.AllowedTools)
	// Output:
	// <skills>
	// Skills are folders of instructions for particular tasks. When a task matches a skill's description, call the skill tool with its name to load its instructions before you start; load a file it mentions with the same tool and that file's path.
	// - changelog: Writes release notes from the git log.
	// </skills>
	// Group the commits since the last tag by area.
	// [Bash(git log:*)]
}
