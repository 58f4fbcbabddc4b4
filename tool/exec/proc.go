package exec

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"sync"
)

// hostProc is a command rein started on this machine, directly or
// through a confining launcher; it leads its own process group.
type hostProc struct {
	cmd  *osexec.Cmd
	done chan struct{}
	code int
	err  error
}

func (p *hostProc) Pid() int              { return p.cmd.Process.Pid }
func (p *hostProc) Done() <-chan struct{} { return p.done }
func (p *hostProc) Signal(sig os.Signal) error {
	return signalGroup(p.cmd.Process, sig)
}
func (p *hostProc) Alive() bool { return groupAlive(p.cmd.Process) }

func (p *hostProc) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

// procs starts host processes and keeps the running ones, so Close can
// end them. Every Context here is built on it.
type procs struct {
	mu      sync.Mutex
	running map[*hostProc]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// start runs cmd in a new session and process group that dies with rein.
func (ps *procs) start(ctx context.Context, cmd *osexec.Cmd, req *StartRequest) (*hostProc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd.Env = req.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, req.Stdout, req.Stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil, ErrClosed
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec: start %s: %w", req.Argv[0], err)
	}
	p := &hostProc{cmd: cmd, done: make(chan struct{})}
	if ps.running == nil {
		ps.running = make(map[*hostProc]struct{})
	}
	ps.running[p] = struct{}{}
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		p.err = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		ps.mu.Lock()
		delete(ps.running, p)
		ps.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// close kills every running group and waits for the leaders.
func (ps *procs) close() {
	ps.mu.Lock()
	ps.closed = true
	var all []*hostProc
	for p := range ps.running {
		all = append(all, p)
	}
	ps.mu.Unlock()
	for _, p := range all {
		p.Signal(killSignal)
	}
	ps.wg.Wait()
	for _, p := range all {
		p.Signal(killSignal) // what the leader left in its group
	}
}

// Unconfined runs commands as the user running rein, with no
// confinement beyond the contract's environment, directory and
// lifetime rules.
type Unconfined struct{ ps procs }

// NewUnconfined returns a Context that confines nothing.
func NewUnconfined() *Unconfined { return &Unconfined{} }

// Start starts req's command directly.
func (u *Unconfined) Start(ctx context.Context, req *StartRequest) (Process, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	cmd := osexec.Command(req.Argv[0], req.Argv[1:]...)
	if lp, err := lookPath(req.Argv[0], req.Env); err == nil {
		cmd.Path = lp
		cmd.Err = nil
	}
	cmd.Dir = req.Dir
	return u.ps.start(ctx, cmd, req)
}

// Info says the context is unconfined.
func (u *Unconfined) Info() Info { return Info{Name: "unconfined", Network: true} }

// Close kills every process it started.
func (u *Unconfined) Close() error {
	u.ps.close()
	return nil
}
