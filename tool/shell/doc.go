// Package shell provides the tools a model uses to run commands in a
// workspace: shell (foreground or background), task_output, task_kill and
// task_wait.
//
// Quick start:
//
//	sh := shell.New(&shell.Options{
//		Policy: &sandbox.Policy{Root: "/home/me/project",
//			Commands: sandbox.CommandRules{Deny: []string{"rm -rf", "git push"}}},
//	})
//	defer sh.Close()          // kills every background task and its processes
//	tools := sh.Tools()       // register with the agent
//	for _, e := range sh.Drain() {
//		fmt.Println(e)        // tell the model which background tasks ended
//	}
//
// Each command runs as "bash -c <command>" (sh when bash is missing) in
// the workspace root, through an execution context (package tool/exec):
// by default a sandbox where the machine offers one (bubblewrap, else
// Landlock), in which the command can write only the workspace and a
// private temporary directory, read only system directories and the
// workspace, sees no other process and has no network. Where no sandbox
// can be made, commands run unconfined and Confinement says why; a host
// should tell the user. Options.Exec chooses another context.
//
// A command runs in a process group of its own, with stdin from
// /dev/null and stdout and stderr interleaved on one pipe. The command
// line is checked against the policy's CommandRules before anything
// runs: a second line of defence, not the first. A time limit (2
// minutes by default, 10 at most) stops the whole group: SIGTERM, then
// SIGKILL after a grace period. Processes a foreground command leaves
// behind in its group are stopped when it ends; in a sandbox, so are
// those that left the group, since the command's PID namespace ends
// with it. Output over the limit keeps its head and tail with a marker
// naming the spill file that holds all of it.
//
// The child's environment is built from an allow-list (Options.Env,
// default exec.DefaultEnv), never inherited whole, and withholds every
// value listed in Options.Secrets.
package shell
