// Package vocab is the one mapping table between rein's built-in tool
// names and input fields and the ones Claude Code's tools use (Bash,
// Read, Edit, …), which hook programs, permission rules and subagent
// definitions written for it name.
package vocab

// Row is one row of the table: a rein tool, the name it is known by
// elsewhere, and how their input fields correspond.
type Row struct {
	Tool   string // rein's tool name
	Theirs string // the name the other format knows it by
	// Fields maps rein's input fields to theirs, each {rein, theirs}.
	// Outgoing input carries their field beside rein's for path fields
	// (scripts of either spelling find the path) and instead of it for
	// the others.
	Fields [][2]string
	// TimeoutMillis: rein's "timeout" is seconds, theirs milliseconds.
	TimeoutMillis bool
}

// Table is the mapping, one row per rein tool that has a counterpart.
var Table = []Row{
	{Tool: "shell", Theirs: "Bash", TimeoutMillis: true},
	{Tool: "read", Theirs: "Read", Fields: [][2]string{{"path", "file_path"}}},
	{Tool: "write", Theirs: "Write", Fields: [][2]string{{"path", "file_path"}}},
	{Tool: "edit", Theirs: "Edit", Fields: [][2]string{{"path", "file_path"}}},
	{Tool: "multi_edit", Theirs: "MultiEdit", Fields: [][2]string{{"path", "file_path"}}},
	{Tool: "ls", Theirs: "LS"},
	{Tool: "glob", Theirs: "Glob"},
	{Tool: "grep", Theirs: "Grep"},
	{Tool: "todo", Theirs: "TodoWrite", Fields: [][2]string{{"items", "todos"}}},
	{Tool: "skill", Theirs: "Skill", Fields: [][2]string{{"name", "skill"}}},
}

// Rein returns rein's name of the tool theirs names ("Read" is "read"),
// and whether the table has it.
func Rein(theirs string) (string, bool) {
	for _, r := range Table {
		if r.Theirs == theirs {
			return r.Tool, true
		}
	}
	return "", false
}
