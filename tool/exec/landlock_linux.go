package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperArg0 is the argv[0] under which the running binary acts as the
// Landlock helper instead of itself.
const helperArg0 = "rein-exec-landlock"

// Landlock confines commands with the kernel's Landlock rules and a
// seccomp filter, applied by a helper: the running binary re-executed
// (programs that use this context call RunHelper first thing in main,
// and tests in TestMain). The helper starts in fresh PID and mount
// namespaces, mounts a /proc that shows only its own processes, applies
// the rules and runs the command in its place.
//
// The PID namespace needs root or unprivileged user namespaces; where
// neither is available, Info().Name is "landlock-shared-pid": other
// processes are then listed in /proc, but Landlock still keeps the
// command from reading their memory or environment and from signalling
// them.
type Landlock struct {
	*sandboxBase
	self  string
	abi   int
	pidNS bool
	sp    *spawner // nil: each command starts its own helper
}

// landlockPolicy is what the helper is told, as JSON in its argv.
type landlockPolicy struct {
	ABI     int      `json:"abi"`
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Network bool     `json:"network"`
	PidNS   bool     `json:"pidns"`
}

// NewLandlock returns a Landlock context, or an error when the kernel
// has no Landlock or the running binary does not call RunHelper.
func NewLandlock(o *SandboxOptions) (*Landlock, error) {
	abi, err := landlockABI()
	if err != nil {
		return nil, err
	}
	if !o.networkDeniable() {
		return nil, errors.New("exec: Landlock cannot deny the network on this architecture; allow the network or use bubblewrap")
	}
	self, err := selfHelper("Landlock")
	if err != nil {
		return nil, err
	}
	b, err := newSandboxBase(o)
	if err != nil {
		return nil, err
	}
	l := &Landlock{sandboxBase: b, self: self, abi: abi, pidNS: true}
	if l.sp, err = l.startSpawner(); err == nil {
		return l, nil
	} else if b.proxy != nil {
		b.close()
		return nil, fmt.Errorf("exec: Landlock cannot serve the allowed hosts here: %w", err)
	}
	if err := l.probe(); err != nil {
		l.pidNS = false
		if err2 := l.probe(); err2 != nil {
			b.close()
			return nil, fmt.Errorf("exec: the Landlock helper does not run: %w", err2)
		}
	}
	return l, nil
}

func (o *SandboxOptions) networkDeniable() bool { return o.Network || auditArch != 0 }

// probe runs /bin/true through the helper.
func (l *Landlock) probe() error {
	p, err := l.Start(context.Background(), &StartRequest{Argv: []string{"/bin/true"}, Dir: l.ws})
	if err != nil {
		return err
	}
	_, err = p.Wait()
	return err
}

var landlockABI = sync.OnceValues(func() (int, error) {
	abi, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
	if errno != 0 {
		return 0, fmt.Errorf("exec: this kernel has no Landlock (%v); use bubblewrap", errno)
	}
	return int(abi), nil
})

// Start runs req's command through the helper.
func (l *Landlock) Start(ctx context.Context, req *StartRequest) (Process, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	dir, err := l.checkDir(req.Dir)
	if err != nil {
		return nil, err
	}
	if l.sp != nil {
		return l.sp.start(ctx, req, dir, l.env(req, l.tmp, dir))
	}
	js, _ := json.Marshal(l.policy())
	cmd := &osexec.Cmd{Path: l.self, Args: append([]string{helperArg0, string(js), "--"}, req.Argv...), Dir: dir}
	cmd.SysProcAttr = l.namespaces()
	r := *req
	r.Env = l.env(req, l.tmp, dir)
	return l.ps.start(ctx, cmd, &r)
}

// policy is what the helper applies. With allowed hosts the sandbox
// has a network namespace of its own, with only the loopback and the
// proxy's forwarder on it, so no seccomp filter is needed for the
// network.
func (l *Landlock) policy() *landlockPolicy {
	return &landlockPolicy{ABI: l.abi, Read: append(append([]string{}, SystemDirs...), l.read...),
		Write: append([]string{l.ws, l.tmp}, l.write...), Network: l.net || l.proxy != nil, PidNS: l.pidNS}
}

// namespaces starts the helper in fresh PID and mount namespaces (and a
// user namespace unless rein runs as root), when the context has them.
// In a user namespace the helper keeps CAP_SYS_ADMIN (for its mounts)
// and CAP_NET_ADMIN (for a spawner's loopback) as ambient capabilities,
// which it clears before a command runs.
func (l *Landlock) namespaces() *syscall.SysProcAttr {
	attr := sysProcAttr()
	if l.pidNS {
		attr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		if l.proxy != nil {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		if os.Geteuid() != 0 {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
			attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
		}
	}
	return attr
}

// startSpawner starts the helper once, as a spawner whose inits each
// apply the Landlock rules and the seccomp filter before their command.
// Its mounts are made read-only once; each init mounts its own /proc,
// for which the spawner keeps CAP_SYS_ADMIN (in its own user namespace
// unless rein runs as root) as an ambient capability the inits clear.
func (l *Landlock) startSpawner() (*spawner, error) {
	pol := spawnPolicy{Landlock: l.policy()}
	if l.proxy != nil {
		pol.Proxy, pol.LoopbackUp = l.proxy.sock, true
	}
	js, _ := json.Marshal(pol)
	cmd := &osexec.Cmd{Path: l.self, Args: []string{spawnArg0, string(js)}, Dir: l.ws}
	cmd.SysProcAttr = l.namespaces()
	return startSpawner(&l.ps, cmd, l.ws)
}

// Info says the context is Landlock.
func (l *Landlock) Info() Info {
	name := "landlock"
	if !l.pidNS {
		name = "landlock-shared-pid"
	}
	return l.info(name, l.pidNS)
}

// Close kills every process it started and removes the private
// temporary directory.
func (l *Landlock) Close() error {
	if l.sp != nil {
		l.sp.close()
	}
	return l.close()
}

// RunHelper makes the running binary act as one of this package's
// helpers when it was started as one, and never returns then; otherwise
// it returns at once. Call it first thing in main (and in TestMain of
// tests that use a sandbox).
func RunHelper() {
	helperReady.Store(true)
	if len(os.Args) < 2 {
		return
	}
	switch {
	case filepath.Base(os.Args[0]) == spawnArg0 && len(os.Args) == 2:
		if err := spawnerMain(spawnPolicyArg(), os.Args[1]); err != nil {
			helperFail(err)
		}
		syscall.Exit(0)
	case os.Args[0] == initArg0 && len(os.Args) == 2:
		helperFail(initMain(spawnPolicyArg()))
	case os.Args[0] == reapArg0 && len(os.Args) >= 3 && os.Args[1] == "--":
		// syscall.Exit, not os.Exit: the helper has nothing to flush, and
		// a race-enabled binary would otherwise wait a second at exit.
		syscall.Exit(reapAndWait(os.Args[2:]))
	case os.Args[0] == helperArg0 && len(os.Args) >= 4 && os.Args[2] == "--":
		var pol landlockPolicy
		if err := json.Unmarshal([]byte(os.Args[1]), &pol); err != nil {
			helperFail(fmt.Errorf("bad policy: %w", err))
		}
		helperFail(confineAndExec(&pol, os.Args[3:]))
	}
}

// spawnPolicyArg is the policy a spawner or an init was given.
func spawnPolicyArg() *spawnPolicy {
	var pol spawnPolicy
	if err := json.Unmarshal([]byte(os.Args[1]), &pol); err != nil {
		helperFail(fmt.Errorf("bad policy: %w", err))
	}
	return &pol
}

func helperFail(err error) {
	fmt.Fprintf(os.Stderr, "rein sandbox: %v\n", err)
	syscall.Exit(126)
}
