package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Bubblewrap confines commands with bwrap: a new mount namespace that
// holds only the system directories (read-only), the workspace and the
// policy's paths, a private /tmp, fresh PID, IPC, UTS and cgroup
// namespaces (and a user namespace unless rein runs as root), no
// capabilities, and a network namespace of its own unless the policy
// allows the network.
//
// bwrap runs under a small helper, the running binary re-executed (main
// calls RunHelper), that reaps what bwrap leaves behind: bwrap can exit
// before its own child is reaped, which on a machine whose init does not
// reap would leave a zombie per command.
type Bubblewrap struct {
	*sandboxBase
	bwrap, self string
	sp          *spawner // nil: each command starts its own bwrap
}

// NewBubblewrap returns a Bubblewrap context, or an error when bwrap is
// not installed or cannot create namespaces here.
func NewBubblewrap(o *SandboxOptions) (*Bubblewrap, error) {
	bin, err := bwrapWorks()
	if err != nil {
		return nil, err
	}
	self, err := selfHelper("bubblewrap")
	if err != nil {
		return nil, err
	}
	b, err := newSandboxBase(o)
	if err != nil {
		return nil, err
	}
	w := &Bubblewrap{sandboxBase: b, bwrap: bin, self: self}
	if w.sp, err = w.startSpawner(); err != nil && b.proxy != nil {
		b.close()
		return nil, fmt.Errorf("exec: bubblewrap cannot serve the allowed hosts here: %w", err)
	}
	return w, nil // without a spawner, each command starts its own bwrap
}

// proxyPath is where rein's proxy socket is bound inside bwrap.
const proxyPath = "/run/rein/proxy.sock"

// spawnerPath is where the running binary is bound inside bwrap, to
// run as the spawner.
const spawnerPath = "/run/rein/" + spawnArg0

// startSpawner starts bwrap once, with the running binary inside as a
// spawner whose inits each drop every capability before their command
// (the spawner keeps CAP_SYS_ADMIN, inside bwrap's namespaces, for the
// inits to mount their /proc, and CAP_SETPCAP for them to empty their
// bounding set).
func (w *Bubblewrap) startSpawner() (*spawner, error) {
	pol := spawnPolicy{DropCaps: true}
	args := append([]string{reapArg0, "--", w.bwrap}, w.args(w.ws)...)
	if w.proxy != nil {
		pol.Proxy = proxyPath
		args = append(args, "--ro-bind", w.proxy.sock, proxyPath)
	}
	js, _ := json.Marshal(pol)
	args = append(args, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP", "--ro-bind", w.self, spawnerPath, "--", spawnerPath, string(js))
	return startSpawner(&w.ps, &osexec.Cmd{Path: w.self, Args: args}, w.ws)
}

var bwrapProbe = sync.OnceValues(func() (string, error) {
	bin, err := osexec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("exec: bwrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)")
	}
	out, err := osexec.Command(bin, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--", "/bin/true").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("exec: bwrap cannot create namespaces here: %v: %s", err, out)
	}
	return bin, nil
})

func bwrapWorks() (string, error) { return bwrapProbe() }

// Start runs req's command inside bwrap.
func (w *Bubblewrap) Start(ctx context.Context, req *StartRequest) (Process, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	dir, err := w.checkDir(req.Dir)
	if err != nil {
		return nil, err
	}
	if w.sp != nil {
		return w.sp.start(ctx, req, dir, w.env(req, "/tmp", dir))
	}
	// bwrap writes to the info pipe once the command's namespace is set
	// up; Start returns only then, so a process that rein is killed after
	// Start returned is one the kernel's parent-death rules reach.
	info, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	defer info.Close()
	args := append([]string{reapArg0, "--", w.bwrap}, w.args(dir)...)
	args = append(append(args, "--info-fd", "3", "--"), req.Argv...)
	cmd := &osexec.Cmd{Path: w.self, Args: args}
	cmd.ExtraFiles = []*os.File{infoW}
	r := *req
	r.Env = w.env(req, "/tmp", dir)
	p, err := w.ps.start(ctx, cmd, &r)
	infoW.Close()
	if err != nil {
		return nil, err
	}
	io.ReadAll(info) // ends when bwrap closes it, or when it exits
	return p, nil
}

// args are bwrap's options for a command that runs in dir.
func (w *Bubblewrap) args(dir string) []string {
	a := []string{"--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--cap-drop", "ALL"}
	if !w.net {
		a = append(a, "--unshare-net")
	}
	// Root needs no user namespace to make the others, and bwrap made
	// through one can lose the kill-on-parent-death that ends it with
	// rein.
	if os.Geteuid() != 0 {
		a = append(a, "--unshare-user")
	}
	for _, d := range SystemDirs {
		if t, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", t, d)
			continue
		}
		a = append(a, "--ro-bind-try", d, d)
	}
	for _, f := range maskedFiles {
		if _, err := os.Lstat(f); err == nil {
			a = append(a, "--ro-bind", "/dev/null", f)
		}
	}
	if w.net {
		// Name resolution may need the resolver's socket or files.
		a = append(a, "--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve")
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--bind", w.tmp, "/tmp")
	for _, p := range w.read {
		a = append(a, "--ro-bind-try", p, p)
	}
	for _, p := range w.write {
		a = append(a, "--bind-try", p, p)
	}
	a = append(a, "--bind", w.ws, w.ws, "--chdir", dir)
	return a
}

// Info says the context is bubblewrap.
func (w *Bubblewrap) Info() Info { return w.info("bubblewrap", true) }

// Close kills every process it started and removes the private /tmp.
func (w *Bubblewrap) Close() error {
	if w.sp != nil {
		w.sp.close()
	}
	return w.close()
}

// reapArg0 is the argv[0] under which the running binary acts as the
// reaping parent of bwrap.
const reapArg0 = "rein-exec-reap"

// reapAndWait runs in the helper: it runs argv (bwrap) in its own
// process group, killed if the helper dies, reaps every orphan that
// lands on it, and returns argv's exit code. Signals that would end
// the group's leader early are caught and dropped (not ignored: an
// ignored signal would stay ignored in bwrap and the command, which the
// group's signal must reach); SIGKILL still ends it.
func reapAndWait(argv []string) int {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "rein sandbox: subreaper:", err)
		return 126
	}
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "info")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rein sandbox:", err)
		return 126
	}
	cmd.ExtraFiles[0].Close()
	cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	for {
		var st syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &st, 0, nil); err == syscall.ECHILD {
			return code
		} else if err != nil && err != syscall.EINTR {
			return code
		}
	}
}
