package exec

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	sysLandlockCreateRuleset     = unix.SYS_LANDLOCK_CREATE_RULESET
	landlockCreateRulesetVersion = unix.LANDLOCK_CREATE_RULESET_VERSION
)

// rulesetAttr is struct landlock_ruleset_attr as of ABI 6 and 7.
type rulesetAttr struct {
	fs, net, scoped uint64
}

// fsRights are the file-system rights each Landlock ABI handles.
func fsRights(abi int) uint64 {
	r := uint64(1<<13 - 1) // ABI 1: execute … make_sym
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileRights are those a rule on a file (not a directory) may hold.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// devices every program may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// confineAndExec runs in the helper: it sets up the namespaces' /proc,
// applies Landlock and seccomp, and executes argv. It returns only on
// failure.
func confineAndExec(pol *landlockPolicy, argv []string) error {
	runtime.LockOSThread()
	if pol.PidNS {
		if err := readOnlyMounts(pol.Write); err != nil {
			return err
		}
		// The working directory was entered before the writable paths
		// became mounts of their own: enter it again, through them.
		if wd, err := os.Getwd(); err == nil {
			if err := unix.Chdir(wd); err != nil {
				return fmt.Errorf("enter %s: %w", wd, err)
			}
		}
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount /proc: %w", err)
		}
		for _, f := range maskedFiles {
			unix.Mount("/dev/null", f, "", unix.MS_BIND|unix.MS_RDONLY, "")
		}
	}
	// The capabilities the mounts needed are not the command's.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := landlockRestrict(pol); err != nil {
		return err
	}
	if !pol.Network {
		if err := denyNetwork(); err != nil {
			return err
		}
	}
	prog, err := lookPath(argv[0], os.Environ())
	if err != nil {
		return err
	}
	if !pol.PidNS {
		return syscall.Exec(prog, argv, os.Environ())
	}
	syscall.Exit(initFor(prog, argv))
	return nil
}

// initFor runs as PID 1 of the command's namespace: it starts the
// command, passes on the signals that would end it (PID 1 ignores
// those it has no handler for, so the command could not be stopped
// gently otherwise), reaps every orphan, and returns the command's exit
// code once it ends; the kernel then ends whatever is left.
func initFor(prog string, argv []string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "rein sandbox: %v\n", err)
		return 126
	}
	go forwardSignals(sigs)
	return waitCommand(pid)
}

// readOnlyMounts makes every mount of the helper's mount namespace
// read-only except the writable paths, which become mounts of their
// own. Landlock rules govern file content; this also keeps chmod, chown
// and utimes, which Landlock does not govern, to the writable paths.
func readOnlyMounts(writable []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, w := range writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(info)) {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		point := unescapeMount(f[4])
		if slices.ContainsFunc(writable, func(w string) bool { return point == w || strings.HasPrefix(point, w+"/") }) {
			continue
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		for opt := range strings.SplitSeq(f[5], ",") {
			flags |= mountFlags[opt]
		}
		if err := unix.Mount("", point, "", flags, ""); err != nil && err != unix.ENOENT && err != unix.EINVAL {
			return fmt.Errorf("make %s read-only: %w", point, err)
		}
	}
	return nil
}

// mountFlags are the per-mount options a remount must keep (a user
// namespace locks them).
var mountFlags = map[string]uintptr{"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func landlockRestrict(pol *landlockPolicy) error {
	handled := fsRights(pol.ABI)
	attr := rulesetAttr{fs: handled}
	size := unsafe.Sizeof(uint64(0)) // ABI 1-3: fs only
	if pol.ABI >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	} else if pol.ABI >= 4 {
		size = 2 * unsafe.Sizeof(uint64(0))
	}
	fd, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	add := func(path string, rights uint64) error {
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // absent paths grant nothing
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			rights &= fileRights
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: rights & handled, Parent_fd: int32(pfd)}
		_, _, errno := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		if errno != 0 {
			return fmt.Errorf("landlock rule for %s: %w", path, errno)
		}
		return nil
	}
	for _, p := range append(pol.Read, "/proc") {
		if err := add(p, readRights); err != nil {
			return err
		}
	}
	for _, p := range devices {
		if err := add(p, unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV); err != nil {
			return err
		}
	}
	for _, p := range pol.Write {
		if err := add(p, handled); err != nil {
			return err
		}
	}
	if _, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock restrict: %w", errno)
	}
	return nil
}

// auditArch is the seccomp architecture of this build, 0 where the
// filter below is not written for it.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// denyNetwork installs a seccomp filter: socket() only for AF_UNIX
// (Landlock confines unix sockets to paths it allows), no io_uring
// (which can open sockets without socket()), and no other syscall ABI.
func denyNetwork() error {
	if auditArch == 0 {
		return errors.New("no seccomp filter for " + runtime.GOARCH)
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		deny = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	)
	f := []unix.SockFilter{
		{Code: ld, K: 4}, // arch
		{Code: jeq, Jt: 1, K: auditArch},
		{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: ld, K: 0},                               // syscall number
		{Code: jge, Jt: 5, K: 0x40000000},              // x32 numbers: deny
		{Code: jeq, Jt: 4, K: unix.SYS_IO_URING_SETUP}, // deny
		{Code: jeq, Jf: 2, K: unix.SYS_SOCKET},
		{Code: ld, K: 16}, // socket's family
		{Code: jeq, Jf: 1, K: unix.AF_UNIX},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: deny},
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	_, _, errno := syscall.Syscall(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}
