// Package exec is the seam for where tool processes run: an execution
// context starts a command and owns its lifetime. The shell and its
// background tasks start every process through a Context, so confinement
// is decided in one place and a new place to run (a container, a remote
// machine) is a new Context, not a change to the tools or the loop.
//
// # The contract
//
// Every Context, confined or not, keeps these promises; the exectest
// package checks them and every implementation here passes it.
//
//   - Environment: the process gets exactly StartRequest.Env plus PWD (the
//     working directory) and what the context documents that it sets (a
//     confined context sets TMPDIR and HOME to its private temporary
//     directory). Nothing is inherited
//     from rein's own environment. Build Env with Environ, which starts
//     from an allow-list of names and withholds every known secret.
//   - Working directory: StartRequest.Dir, which must exist; a confined
//     context refuses a Dir outside its workspace.
//   - Output: stdout and stderr go to the given writers (nil discards),
//     stdin reads StartRequest.Stdin (nil is an empty input).
//   - Lifetime: the process leads a new session and process group;
//     Process.Signal reaches the whole group. The process is sent SIGKILL
//     when rein dies (PR_SET_PDEATHSIG), even by SIGKILL. A confined
//     context also runs it in a fresh PID namespace, so every process it
//     starts, including those that leave its group, ends with it. Close
//     kills every process the context started and waits for them.
//   - Confinement (Info().Confined): writes only inside the workspace,
//     the paths the policy adds and a private temporary directory; reads
//     only of system directories (read-only), the workspace and the
//     paths the policy adds, so home directories and other users' files
//     are out of reach; no network unless the policy allows it (all of
//     it, or only the hosts it lists, through rein's proxy); other
//     processes, rein's own included, are invisible and cannot be
//     signalled. The private temporary directory is one per context,
//     shared by its commands. Unconfined runs the process as the user
//     running rein.
//
// # Starting a confined command
//
// Bubblewrap and Landlock set their sandbox up once per context: the
// running binary, re-executed inside it as a spawner, keeps an init
// ready (a fresh PID and mount namespace with its own /proc, confined
// already), and a command is handed to that init over a Unix socket,
// its stdin, stdout and stderr passed as descriptors; a command pays
// for a message and a fork. An init whose command left nothing running
// and changed nothing of the init runs the next command too (a few are
// kept idle), so commands back to back cost the same; an init whose
// command left a process running ends with its namespace, which stops
// that process, and a new init is started between commands. Signals
// for a command travel on the init's socket and reach no later command.
// Where the spawner cannot run, each command starts a sandbox of its
// own.
//
// # Choosing a context
//
// NewSandbox returns the best confinement the machine offers: Bubblewrap
// when the bwrap program is installed and works, else Landlock (a
// re-executed helper of the running binary that applies Landlock
// rules and a seccomp filter before it runs the command). Unconfined
// confines nothing; use it only where the machine itself is the
// boundary (a container or VM) and say so to the user.
package exec
