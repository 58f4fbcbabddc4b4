package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawner is rein's side of a sandbox started once per context: every
// command runs in an init the spawner inside started ahead of time, in
// a PID namespace of its own, so a command pays for a message and a
// fork, not for a sandbox's set-up.
type spawner struct {
	launch *hostProc // what runs the spawner: the Landlock helper, or bwrap under the reaper
	ctl    *net.UnixConn
	errOut *headBuffer // the spawner's stderr, for errors

	ctlMu   sync.Mutex // orders the requests for inits on ctl
	mu      sync.Mutex
	closed  bool
	running map[*spawnedProc]struct{}
	wg      sync.WaitGroup
}

// startSpawner runs cmd, which must end in the spawner, with the
// control socket as its fd 3, asks for the first init, and checks the
// sandbox by running /bin/true in it.
func startSpawner(ps *procs, cmd *osexec.Cmd, probeDir string) (*spawner, error) {
	ctl, peer, err := socketPair()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{peer}
	s := &spawner{ctl: ctl, errOut: &headBuffer{}, running: map[*spawnedProc]struct{}{}}
	s.launch, err = ps.start(context.Background(), cmd, &StartRequest{Argv: cmd.Args, Env: []string{}, Stderr: s.errOut})
	peer.Close()
	if err != nil {
		ctl.Close()
		return nil, err
	}
	if err := sendFrame(ctl, nil); err == nil { // the first init
		var p Process
		p, err = s.start(context.Background(), &StartRequest{Argv: []string{"/bin/true"}}, probeDir, []string{})
		if err == nil {
			if _, werr := p.Wait(); werr != nil {
				err = fmt.Errorf("exec: /bin/true in the sandbox: %v: %s", werr, s.errOut)
			}
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// init is an init taken from the spawner, ready for its command.
type initConn struct {
	conn *net.UnixConn
	pid  int
}

// take takes the oldest init the spawner started. The caller asks for
// the next one (next) once its command is on its way, so the next
// init's start does not compete with this command's.
func (s *spawner) take(ctx context.Context) (*initConn, error) {
	s.ctlMu.Lock()
	if d, ok := ctx.Deadline(); ok {
		s.ctl.SetReadDeadline(d)
		defer s.ctl.SetReadDeadline(time.Time{})
	}
	f, err := recvFrame(s.ctl)
	s.ctlMu.Unlock()
	if err != nil {
		return nil, s.ended(err)
	}
	if len(f.files) != 1 {
		f.close()
		s.next()
		return nil, fmt.Errorf("exec: the sandbox could not start a command: %s", f.body)
	}
	c, err := fileConn(f.files[0])
	f.close()
	if err != nil {
		s.next()
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetReadDeadline(d)
		defer c.SetReadDeadline(time.Time{})
	}
	ready, err := recvFrame(c)
	if err != nil || string(ready.body) != "ready" || ready.pid <= 0 {
		c.Close()
		s.next()
		return nil, s.ended(err)
	}
	return &initConn{conn: c, pid: ready.pid}, nil
}

// next asks the spawner for one more init. A spawner that has ended
// answers no more; the take that waits for the answer says so.
func (s *spawner) next() { sendFrame(s.ctl, nil) }

func (s *spawner) ended(err error) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err == nil {
		err = errors.New("no answer")
	}
	msg := strings.TrimSpace(s.errOut.String())
	if msg == "" {
		msg = "no message"
	}
	return fmt.Errorf("exec: the sandbox ended (%v): %s", err, msg)
}

// start runs req's command in the next init, in dir with env.
func (s *spawner) start(ctx context.Context, req *StartRequest, dir string, env []string) (Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.wg.Add(1) // before Close can wait, so it waits for this command too
	s.mu.Unlock()
	io, err := newStdio(req)
	if err != nil {
		s.wg.Done()
		return nil, err
	}
	in, err := s.take(ctx)
	if err != nil {
		io.abort()
		s.wg.Done()
		return nil, err
	}
	body, _ := json.Marshal(spawnRequest{Argv: req.Argv, Dir: dir, Env: env})
	err = sendFrame(in.conn, body, io.fds()...)
	s.next()
	io.started()
	if err != nil {
		in.conn.Close()
		io.abort()
		s.wg.Done()
		return nil, fmt.Errorf("exec: start %s: %w", req.Argv[0], err)
	}
	p := &spawnedProc{pid: in.pid, done: make(chan struct{})}
	s.mu.Lock()
	s.running[p] = struct{}{}
	if s.closed {
		p.Signal(killSignal)
	}
	s.mu.Unlock()
	go s.await(p, in.conn, io)
	return p, nil
}

// await waits for the init's report of how the command ended (none
// means a SIGKILL ended the init) and for its output.
func (s *spawner) await(p *spawnedProc, c *net.UnixConn, io *stdio) {
	defer s.wg.Done()
	f, err := recvFrame(c)
	c.Close()
	p.code, p.err = -1, errors.New("signal: killed")
	if err == nil {
		if code, err := strconv.Atoi(string(f.body)); err == nil {
			p.code, p.err = code, nil
			if code != 0 {
				p.err = fmt.Errorf("exit status %d", code)
			}
		}
	}
	io.wait()
	s.mu.Lock()
	delete(s.running, p)
	s.mu.Unlock()
	close(p.done)
}

// close kills every command, ends the spawner and waits for both.
func (s *spawner) close() {
	s.mu.Lock()
	s.closed = true
	for p := range s.running {
		p.Signal(killSignal)
	}
	s.mu.Unlock()
	s.ctl.Close() // ends a take that waits for the spawner
	s.launch.Signal(killSignal)
	<-s.launch.Done()
	s.wg.Wait()
}

// spawnedProc is a command a spawner's init runs; the init leads its
// process group, and pid is the init's pid as rein sees it.
type spawnedProc struct {
	pid  int
	done chan struct{}
	code int
	err  error
}

func (p *spawnedProc) Pid() int                   { return p.pid }
func (p *spawnedProc) Done() <-chan struct{}      { return p.done }
func (p *spawnedProc) Signal(sig os.Signal) error { return signalPid(p.pid, sig) }
func (p *spawnedProc) Alive() bool                { return syscall.Kill(-p.pid, 0) == nil }

func (p *spawnedProc) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

// headBuffer keeps the first few kilobytes written to it.
type headBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := 4096 - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
