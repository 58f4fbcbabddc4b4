package exec

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The inside of a spawner: the running binary re-executed inside the
// sandbox. The spawner (spawnArg0) is started once per context, in the
// sandbox's namespaces; each time rein asks on its control socket it
// starts an init (initArg0) in a fresh PID and mount namespace of its
// own, which mounts its /proc, confines itself, says it is ready and
// waits for its one command. rein asks for the next init when a
// command ends (or when one starts while another runs), so the cost of
// an init's start is paid between commands, not in them.

const (
	spawnArg0 = "rein-exec-spawn"
	initArg0  = "rein-exec-init"
)

// spawnPolicy is what the spawner and its inits are told, as JSON in
// their argv.
type spawnPolicy struct {
	// Landlock, when set, is applied by each init before its command
	// runs (and the spawner first makes its mounts read-only).
	Landlock *landlockPolicy `json:"landlock,omitempty"`
	// DropCaps has each init drop every capability before its command
	// runs; otherwise only the ambient ones are cleared, so the command
	// holds what a process of its user holds.
	DropCaps bool `json:"dropcaps,omitempty"`
	// Proxy, when set, is the Unix socket of rein's proxy, which the
	// spawner serves on the loopback ProxyPort of the sandbox's network
	// namespace; LoopbackUp has it bring the loopback up first.
	Proxy      string `json:"proxy,omitempty"`
	LoopbackUp bool   `json:"loopbackup,omitempty"`
}

// spawnRequest is one command for an init, sent with its stdin, stdout
// and stderr.
type spawnRequest struct {
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// spawnerMain runs in the spawner: it answers every request on its
// control socket (fd 3) with the rein end of a new init's socket, and
// ends when rein closes the socket.
func spawnerMain(pol *spawnPolicy, js string) error {
	runtime.LockOSThread() // inits die with the thread that started them
	if pol.Landlock != nil {
		if err := readOnlyMounts(pol.Landlock.Write); err != nil {
			return err
		}
	}
	for _, f := range maskedFiles {
		unix.Mount("/dev/null", f, "", unix.MS_BIND|unix.MS_RDONLY, "")
	}
	if pol.Proxy != "" {
		if err := forward(pol.Proxy, pol.LoopbackUp); err != nil {
			return err
		}
	}
	ctl, err := fdConn(3)
	if err != nil {
		return err
	}
	go reapChildren()
	for {
		f, err := recvFrame(ctl)
		if err != nil {
			return nil // rein closed the socket, or died
		}
		f.close()
		if err := startInit(ctl, js); err != nil {
			return err
		}
	}
}

// startInit starts an init and hands rein its end of the init's
// socket, or a frame without one that says why it could not.
func startInit(ctl *net.UnixConn, js string) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sendFrame(ctl, []byte("socketpair: "+err.Error()))
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		return sendFrame(ctl, []byte("pass credentials: "+err.Error()))
	}
	_, err = syscall.ForkExec("/proc/self/exe", []string{initArg0, js}, &syscall.ProcAttr{
		Env: []string{}, Files: []uintptr{0, 1, 2, uintptr(fds[1])},
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS},
	})
	if err != nil {
		return sendFrame(ctl, []byte("start an init: "+err.Error()))
	}
	return sendFrame(ctl, nil, fds[0])
}

// fdConn makes a connection of the inherited socket fd and closes fd
// itself (the connection holds a copy), so no finalizer closes the
// number later, when a new descriptor may have it.
func fdConn(fd uintptr) (*net.UnixConn, error) {
	f := os.NewFile(fd, "inherited")
	defer f.Close()
	return fileConn(f)
}

// reapChildren reaps the spawner's ended inits.
func reapChildren() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	for range sigs {
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// initMain runs in an init: PID 1 of a namespace of its own. It mounts
// the namespace's /proc, confines itself, tells rein it is ready (rein
// learns its pid from the message's credentials), runs the one command
// rein sends, and reports its exit code.
func initMain(pol *spawnPolicy) error {
	runtime.LockOSThread() // confinement applies to this thread, the command's parent
	if err := mountProc(); err != nil {
		return err
	}
	if err := dropCaps(pol.DropCaps); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if ll := pol.Landlock; ll != nil {
		if err := landlockRestrict(ll); err != nil {
			return err
		}
		if !ll.Network {
			if err := denyNetwork(); err != nil {
				return err
			}
		}
	}
	conn, err := fdConn(3)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := sendFrame(conn, []byte("ready")); err != nil {
		return err
	}
	f, err := recvFrame(conn)
	if err != nil {
		syscall.Exit(0) // rein closed without a command: nothing to run
	}
	code := runCommand(f, sigs)
	report := strconv.Itoa(code)
	if othersRunning() {
		report += lingerMark // they end with this init, which ends the namespace
	}
	sendFrame(conn, []byte(report))
	syscall.Exit(code)
	return nil
}

// runCommand starts the command f asks for, passes on the signals that
// would end it (PID 1 receives only those it handles), reaps every
// orphan, and returns the command's exit code (128+n when signal n
// ended it).
func runCommand(f *frame, sigs chan os.Signal) int {
	var req spawnRequest
	if err := json.Unmarshal(f.body, &req); err != nil || len(req.Argv) == 0 || len(f.files) != 3 {
		return 126
	}
	fail := func(err error) int {
		fmt.Fprintf(f.files[2], "rein sandbox: %v\n", err)
		f.close()
		return 126
	}
	prog, err := lookPath(req.Argv[0], req.Env)
	if err != nil {
		return fail(err)
	}
	pid, err := syscall.ForkExec(prog, req.Argv, &syscall.ProcAttr{Dir: req.Dir, Env: req.Env,
		Files: []uintptr{f.files[0].Fd(), f.files[1].Fd(), f.files[2].Fd()}})
	if err != nil {
		return fail(err)
	}
	f.close()
	go forwardSignals(sigs)
	return waitCommand(pid)
}

// forwardSignals passes each signal an init gets to every process of its
// namespace but itself.
func forwardSignals(sigs <-chan os.Signal) {
	for sig := range sigs {
		syscall.Kill(-1, sig.(syscall.Signal))
	}
}

// lingerMark follows an init's exit code when the command left processes
// running, which the end of its namespace stops.
const lingerMark = " lingered"

// othersRunning reaps what has ended and reports whether any process the
// command started is still running.
func othersRunning() bool {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR || pid > 0:
			continue
		case err != nil: // ECHILD: no child left
			return false
		}
		return true // children that have not ended
	}
}

// waitCommand reaps children until pid ends, and returns how it ended.
func waitCommand(pid int) int {
	for {
		var st syscall.WaitStatus
		got, err := syscall.Wait4(-1, &st, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 126
		}
		if got != pid {
			continue
		}
		if st.Signaled() {
			return 128 + int(st.Signal())
		}
		return st.ExitStatus()
	}
}

// procCovers are the parts of /proc that could change the machine
// rather than describe a process: made read-only, as bubblewrap does.
var procCovers = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

// mountProc gives the init's namespace a /proc of its own, which lists
// only its processes.
func mountProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("proc", "/proc", "proc", flags, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, p := range procCovers {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			continue // absent here
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// dropCaps clears the ambient capabilities (which the spawner held to
// let its inits mount /proc) and, when all is set, every other one.
func dropCaps(all bool) error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if !all {
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}
