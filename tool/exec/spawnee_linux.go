package exec

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The inside of a spawner: the running binary re-executed inside the
// sandbox. The spawner (spawnArg0) is started once per context, in the
// sandbox's namespaces; each time rein asks on its control socket it
// starts an init (initArg0) in a fresh PID and mount namespace of its
// own, which mounts its /proc, confines itself, says it is ready and
// waits for a command. An init runs commands one after another for as
// long as each leaves nothing behind (no process, no change to the
// init's state); rein keeps such inits idle for the next commands. rein
// asks for a new init when a command ends (or when one starts while
// another runs and none is idle), so the cost of an init's start is paid
// between commands, not in them.

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
	// holds what a process of its user holds (as root, all but
	// CAP_SYS_PTRACE).
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
// learns its pid from the message's credentials) and runs the commands
// rein sends, one at a time (serveCommands).
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
	// Not dumpable: a command's processes cannot trace the init, take
	// its descriptors (pidfd_getfd) or read its memory, and so cannot
	// reach the next command it runs.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("not dumpable: %w", err)
	}
	conn, err := fdConn(3)
	if err != nil {
		return err
	}
	// PID 1 receives only the signals it handles; these are caught and
	// dropped, as a command's signals come from rein as frames.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := sendFrame(conn, []byte("ready")); err != nil {
		return err
	}
	syscall.Exit(serveCommands(conn))
	return nil
}

// serveCommands runs each command rein sends on conn and reports how it
// ended. After a command that left nothing running and changed nothing
// of the init's state, the report says so (againMark) and the init waits
// for the next command; otherwise it returns the command's exit code,
// and the end of the namespace stops what the command left. It returns
// 0 when rein closes the socket between commands.
func serveCommands(conn *net.UnixConn) int {
	var running atomic.Bool
	reqs, forked := make(chan *frame), make(chan struct{})
	go readRequests(conn, reqs, forked, &running)
	start := readInitState()
	for f := range reqs {
		pid, code := startCommand(f)
		forked <- struct{}{}
		if pid > 0 {
			code = waitCommand(pid)
		}
		report, again := strconv.Itoa(code), false
		switch {
		case othersRunning():
			report += lingerMark
		case start.same(readInitState()):
			report, again = report+againMark, true
		}
		running.Store(false) // what rein sends for this command from now on is dropped
		if sendFrame(conn, []byte(report)) != nil || !again {
			return code
		}
	}
	return 0
}

// readRequests reads rein's frames on conn: signals for the running
// command, which it passes to every process of the namespace but
// itself, and commands, which it sends on reqs, reading on once forked
// says the command was started. It handles one frame at a time, in
// order, so a signal rein sent for a command is passed on once the
// command runs, or dropped once it has ended, and before the next
// command starts.
func readRequests(conn *net.UnixConn, reqs chan<- *frame, forked <-chan struct{}, running *atomic.Bool) {
	defer close(reqs)
	for {
		f, err := recvFrame(conn)
		if err != nil {
			return
		}
		if sig, ok := signalFrame(f.body); ok {
			f.close()
			if running.Load() {
				syscall.Kill(-1, sig)
			}
			continue
		}
		running.Store(true)
		reqs <- f
		<-forked
	}
}

// signalMessage is the body of the frame that asks an init to pass sig on.
func signalMessage(sig syscall.Signal) []byte { return []byte(signalPrefix + strconv.Itoa(int(sig))) }

// signalFrame parses a frame made by signalMessage.
func signalFrame(body []byte) (syscall.Signal, bool) {
	n, ok := strings.CutPrefix(string(body), signalPrefix)
	if !ok {
		return 0, false
	}
	sig, err := strconv.Atoi(n)
	return syscall.Signal(sig), err == nil && sig > 0
}

const signalPrefix = "signal "

// startCommand starts the command f asks for and closes f's files. It
// returns the command's pid, or 0 and the exit code 126 when it could
// not start.
func startCommand(f *frame) (int, int) {
	defer f.close()
	var req spawnRequest
	if err := json.Unmarshal(f.body, &req); err != nil || len(req.Argv) == 0 || len(f.files) != 3 {
		return 0, 126
	}
	prog, err := lookPath(req.Argv[0], req.Env)
	if err == nil {
		var pid int
		pid, err = syscall.ForkExec(prog, req.Argv, &syscall.ProcAttr{Dir: req.Dir, Env: req.Env,
			Files: []uintptr{f.files[0].Fd(), f.files[1].Fd(), f.files[2].Fd()}})
		if err == nil {
			return pid, 0
		}
	}
	fmt.Fprintf(f.files[2], "rein sandbox: %v\n", err)
	return 0, 126
}

// forwardSignals passes each signal an init gets to every process of its
// namespace but itself.
func forwardSignals(sigs <-chan os.Signal) {
	for sig := range sigs {
		syscall.Kill(-1, sig.(syscall.Signal))
	}
}

// lingerMark follows an init's exit code when the command left processes
// running, which the end of its namespace stops; againMark follows it
// when the init waits for another command.
const (
	lingerMark = " lingered"
	againMark  = " again"
)

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
// Otherwise a command run as root keeps root's capabilities but
// CAP_SYS_PTRACE, with which it could reach into the init, the parent
// of the next command, despite the init being not dumpable.
func dropCaps(all bool) error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if !all {
		if unix.Geteuid() != 0 {
			return nil // a command of an ordinary user gets no capabilities
		}
		return dropPtrace()
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

// dropPtrace takes CAP_SYS_PTRACE out of the bounding and inheritable
// sets, so no program the init starts gains it.
func dropPtrace() error {
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil {
		return fmt.Errorf("drop CAP_SYS_PTRACE: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	data[unix.CAP_SYS_PTRACE/32].Inheritable &^= 1 << (unix.CAP_SYS_PTRACE % 32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop CAP_SYS_PTRACE: %w", err)
	}
	return nil
}
