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
)

// spawner is rein's side of a sandbox started once per context: every
// command runs in an init the spawner inside started ahead of time, in
// a PID namespace of its own, so a command pays for a message and a
// fork, not for a sandbox's set-up.
type spawner struct {
	launch *hostProc // what runs the spawner: the Landlock helper, or bwrap under the reaper
	ctl    *net.UnixConn
	errOut *headBuffer // the spawner's stderr, for errors

	warm    chan *initConn // the next init, from prefetch
	quit    chan struct{}  // closed by Close, to end prefetch
	mu      sync.Mutex
	pending int // inits asked for and not taken
	closed  bool
	running map[*spawnedProc]struct{}
	wg      sync.WaitGroup
}

// perCommand, set by tests, has every confined context start a sandbox
// per command, as it does where the spawner cannot run.
var perCommand bool

// startSpawner runs cmd, which must end in the spawner, with the
// control socket as its fd 3, and checks the sandbox by running
// /bin/true in it.
func startSpawner(ps *procs, cmd *osexec.Cmd, probeDir string) (*spawner, error) {
	if perCommand {
		return nil, errors.New("exec: a sandbox per command, as the test asks")
	}
	ctl, peer, err := socketPair()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{peer}
	s := &spawner{ctl: ctl, errOut: &headBuffer{}, running: map[*spawnedProc]struct{}{},
		warm: make(chan *initConn), quit: make(chan struct{})}
	s.launch, err = ps.start(context.Background(), cmd, &StartRequest{Argv: cmd.Args, Env: []string{}, Stderr: s.errOut})
	peer.Close()
	if err != nil {
		ctl.Close()
		return nil, err
	}
	go s.prefetch()
	var p Process
	p, err = s.start(context.Background(), &StartRequest{Argv: []string{"/bin/true"}}, probeDir, []string{})
	if err == nil {
		if _, werr := p.Wait(); werr != nil {
			err = fmt.Errorf("exec: /bin/true in the sandbox: %v: %s", werr, s.errOut)
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// initConn is an init, ready for its command, or why there is none.
type initConn struct {
	conn *net.UnixConn
	pid  int
	err  error
}

// prefetch receives each init the spawner starts and waits, in warm,
// for a command to take it; it ends (closing warm) when the spawner
// does or Close says so.
func (s *spawner) prefetch() {
	defer close(s.warm)
	for {
		in, fatal := s.receive()
		select {
		case s.warm <- in:
		case <-s.quit:
			if in.conn != nil {
				in.conn.Close()
			}
			return
		}
		if fatal {
			return
		}
	}
}

// receive receives the next init and its ready message. fatal says
// the spawner has ended.
func (s *spawner) receive() (in *initConn, fatal bool) {
	f, err := recvFrame(s.ctl)
	if err != nil {
		return &initConn{err: s.ended(err)}, true
	}
	defer f.close()
	if len(f.files) != 1 {
		return &initConn{err: fmt.Errorf("exec: the sandbox could not start a command: %s", f.body)}, false
	}
	c, err := fileConn(f.files[0])
	if err != nil {
		return &initConn{err: err}, false
	}
	ready, err := recvFrame(c)
	if err != nil || string(ready.body) != "ready" || ready.pid <= 0 {
		c.Close()
		return &initConn{err: s.ended(err)}, false
	}
	return &initConn{conn: c, pid: ready.pid}, false
}

// take takes the init that is ready next, asking for one when none is
// on its way. The next is asked for when a command ends (refill), so an
// init starts between commands rather than during one; a command that
// starts while another runs asks for its own.
func (s *spawner) take(ctx context.Context) (*initConn, error) {
	s.mu.Lock()
	if s.pending == 0 {
		s.pending++
		s.next()
	}
	s.mu.Unlock()
	select {
	case in, ok := <-s.warm:
		if !ok {
			return nil, s.ended(nil)
		}
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
		return in, in.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// refill asks for an init when none is on its way.
func (s *spawner) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == 0 && !s.closed {
		s.pending++
		s.next()
	}
}

// next asks the spawner for one more init. A spawner that has ended
// answers no more, and take says so.
func (s *spawner) next() { sendFrame(s.ctl, nil) }

// ended says the spawner ended, with what it wrote, or ErrClosed after
// Close.
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
	in, err := s.take(ctx)
	if err != nil {
		return nil, err
	}
	return s.hand(in, req, dir, env)
}

// hand hands the init its command and asks for the next init.
func (s *spawner) hand(in *initConn, req *StartRequest, dir string, env []string) (Process, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		in.conn.Close()
		return nil, ErrClosed
	}
	s.wg.Add(1) // before Close can wait, so it waits for this command too
	s.mu.Unlock()
	io, err := newStdio(req)
	if err != nil {
		in.conn.Close()
		s.wg.Done()
		return nil, err
	}
	body, _ := json.Marshal(spawnRequest{Argv: req.Argv, Dir: dir, Env: env})
	err = sendFrame(in.conn, body, io.fds()...)
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
		f.close() // an init passes none; a command that took its init over might

		body, lingered := strings.CutSuffix(string(f.body), lingerMark)
		p.lingered = lingered
		if code, err := strconv.Atoi(body); err == nil {
			p.code, p.err = code, nil
			if code != 0 {
				p.err = fmt.Errorf("exit status %d", code)
			}
		}
	}
	s.refill()
	io.wait()
	s.mu.Lock()
	delete(s.running, p)
	s.mu.Unlock()
	close(p.done)
}

// close kills every command, ends the spawner and waits for both.
func (s *spawner) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for p := range s.running {
		p.Signal(killSignal)
	}
	s.mu.Unlock()
	close(s.quit)
	s.ctl.Close()
	s.launch.Signal(killSignal)
	<-s.launch.Done()
	for in := range s.warm { // until prefetch has ended
		if in.conn != nil {
			in.conn.Close()
		}
	}
	s.wg.Wait()
}

// spawnedProc is a command a spawner's init runs; the init leads its
// process group, and pid is the init's pid as rein sees it.
type spawnedProc struct {
	pid      int
	done     chan struct{}
	code     int
	err      error
	lingered bool // the command left processes running; set before done closes
}

func (p *spawnedProc) Pid() int                   { return p.pid }
func (p *spawnedProc) Done() <-chan struct{}      { return p.done }
func (p *spawnedProc) Signal(sig os.Signal) error { return signalPid(p.pid, sig) }

// Alive reports whether the command's processes are still running. Once
// the command has ended, the init that ran it does not count: only what
// the command left behind, until the end of the namespace stops it.
func (p *spawnedProc) Alive() bool {
	select {
	case <-p.done:
		if !p.lingered {
			return false
		}
	default:
	}
	return syscall.Kill(-p.pid, 0) == nil
}

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
