package exec

// PerCommandForTest has confined contexts made from now until undo
// start a sandbox per command instead of a spawner.
func PerCommandForTest() (undo func()) {
	perCommand = true
	return func() { perCommand = false }
}
