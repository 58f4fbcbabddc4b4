package tool

// Rerunner is implemented by tools that say whether a call of theirs may
// run a second time with the same arguments: after a crash or a suspend
// cut it short, a durable turn runs such a call again instead of telling
// the model it was interrupted. Hosts read it with Rerunnable.
type Rerunner interface {
	Rerunnable() bool
}

// Rerunnable reports whether a call of t may be run again when a durable
// turn resumes: what t declares as a Rerunner, itself or under its
// wrappers (found with As), else whether its annotations say it is
// read-only. Idempotent alone is not enough: the world may have changed
// between the cut and the resume (a file written again by hand), and a
// repeated write would undo that. A tool that declares nothing may not be
// re-run.
func Rerunnable(t Tool) bool {
	if r, ok := As[Rerunner](t); ok {
		return r.Rerunnable()
	}
	a := t.Spec().Annotations
	return a != nil && a.ReadOnly
}
