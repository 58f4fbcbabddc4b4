// Package fs provides the filesystem tools a model uses to work in a
// workspace: read, write, edit, multi_edit, ls, glob and grep. Every
// access goes through a *sandbox.Policy, so no path outside the workspace
// is read, written or listed.
//
// The tools share a ReadState per session: a file must be read before it
// is overwritten or edited, an edit of a file that changed on disk since
// it was read is refused with a message to read it again, and reading an
// unchanged file again returns a short note instead of the content.
//
// Quick start:
//
//	policy := &sandbox.Policy{Root: "/path/to/repo"}
//	tools := fs.NewTools(policy, nil) // read, write, edit, multi_edit, ls, glob, grep
//	// register tools with the agent; each call's Session keys the read-state
//
// glob and grep skip the .git and .rein directories (.rein holds rein's
// spilled outputs; read them by path) and files ignored by .gitignore
// files, nested ones and negations included.
//
// All model-facing text (results and errors) says what happened and what
// to do next. Output is bounded: long files are read in ranges, long
// lines are cut, and listings and searches stop at a limit with a marker
// saying how much more there is.
package fs
