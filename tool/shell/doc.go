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
// the workspace root, in a process group of its own, with stdin from
// /dev/null and stdout and stderr interleaved on one pipe. The command
// line is checked against the policy's CommandRules before anything runs.
// A time limit (2 minutes by default, 10 at most) stops the whole group:
// SIGTERM, then SIGKILL after a grace period. Processes a foreground
// command leaves behind in its group are stopped when it ends; processes
// that leave the group (setsid, double forks into a new session) are not
// tracked. Output over the limit keeps its head and tail with a marker
// naming the spill file that holds all of it.
//
// The shell is not a jail: commands can read and write anything the
// user running rein can, inside the workspace or not; run rein in a
// container or VM for isolation. Likewise a read-only Policy does not
// make commands read-only. To keep a session from changing the
// workspace, list read-only commands in CommandRules.Allow, or leave the
// shell tools out.
//
// The child's environment drops variables whose names look like secrets
// (KEY, TOKEN, SECRET, PASSWORD, …) unless Options.Env lists what to pass.
package shell
