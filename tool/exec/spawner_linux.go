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

	"golang.org/x/sys/unix"
)

// spawner is rein's side of a sandbox started once per context: every
// command runs in an init the spawner inside started ahead of time, in
// a PID namespace of its own, so a command pays for a message and a
// fork, not for a sandbox's set-up. An init whose command left nothing
// behind runs the next command too: it waits, idle, for one.
type spawner struct {
	launch *hostProc // what runs the spawner: the Landlock helper, or bwrap under the reaper
	ctl    *net.UnixConn
	errOut *headBuffer // the spawner's stderr, for errors

	warm    chan *initConn // the next init, from prefetch
	quit    chan struct{}  // closed by Close, to end prefetch
	mu      sync.Mutex
	pending int         // inits asked for and not taken
	idle    []*initConn // inits that ran a command and wait for another, at most maxIdle
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

// maxIdle bounds the inits kept idle; more are closed, which ends them.
const maxIdle = 2

// initConn is an init, ready for a command, or why there is none.
type initConn struct {
	conn *net.UnixConn
	pid  int
	err  error
	used bool // it ran a command before, and may have been ended since
}

// errStale says an idle init ended before it was handed a command.
var errStale = errors.New("exec: the idle init has ended")

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

// take takes an idle init, or else the init that is ready next, asking
// for one when none is on its way. The next is asked for when a command
// ends (refill), so an init starts between commands rather than during
// one; a command that starts while another runs and none is idle asks
// for its own.
func (s *spawner) take(ctx context.Context) (*initConn, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		in := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return in, nil
	}
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
	for {
		in, err := s.take(ctx)
		if err != nil {
			return nil, err
		}
		if p, err := s.hand(in, req, dir, env); err != errStale {
			return p, err
		}
	}
}

// hand hands the init its command, or says errStale when an idle init
// has ended (killed from outside, say) and another must be taken.
func (s *spawner) hand(in *initConn, req *StartRequest, dir string, env []string) (Process, error) {
	if in.used && !peerOpen(in.conn) {
		in.conn.Close()
		return nil, errStale
	}
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
	p := &spawnedProc{pid: in.pid, conn: in.conn, done: make(chan struct{})}
	s.mu.Lock()
	s.running[p] = struct{}{}
	if s.closed {
		p.Signal(killSignal)
	}
	s.mu.Unlock()
	go s.await(p, in, io)
	return p, nil
}

// await waits for the init's report of how the command ended (none
// means a SIGKILL ended the init) and for its output, and puts the init
// back among the idle ones when it waits for another command.
func (s *spawner) await(p *spawnedProc, in *initConn, io *stdio) {
	defer s.wg.Done()
	f, err := recvFrame(in.conn)
	p.code, p.err = -1, errors.New("signal: killed")
	again := false
	if err == nil {
		f.close() // an init passes none
		body, ok := strings.CutSuffix(string(f.body), againMark)
		again = ok
		body, p.lingered = strings.CutSuffix(body, lingerMark)
		if code, err := strconv.Atoi(body); err == nil {
			p.code, p.err = code, nil
			if code != 0 {
				p.err = fmt.Errorf("exit status %d", code)
			}
		}
	}
	if p.release() && again {
		s.putIdle(in)
	} else {
		in.conn.Close()
	}
	s.refill()
	io.wait()
	s.mu.Lock()
	delete(s.running, p)
	s.mu.Unlock()
	close(p.done)
}

// putIdle keeps in for a next command, or closes it (which ends it) when
// enough are idle or the spawner is closed.
func (s *spawner) putIdle(in *initConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.idle) >= maxIdle {
		in.conn.Close()
		return
	}
	in.used = true
	s.idle = append(s.idle, in)
}

// close kills every command, ends the idle inits and the spawner, and
// waits for them.
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
	for _, in := range s.idle {
		in.conn.Close()
	}
	s.idle = nil
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
// process group, and pid is the init's pid as rein sees it (the same for
// the commands an init runs one after another).
type spawnedProc struct {
	pid      int
	conn     *net.UnixConn // the init's socket, which carries signals
	done     chan struct{}
	code     int
	err      error
	lingered bool // the command left processes running; set before done closes

	mu       sync.Mutex // orders each signal before the release
	released bool       // the init reported the end: signals reach no one now
	killed   bool       // SIGKILL was sent to the init, which is not to run another command
}

func (p *spawnedProc) Pid() int              { return p.pid }
func (p *spawnedProc) Done() <-chan struct{} { return p.done }

// Signal passes sig to the command's processes: SIGKILL kills the init
// and with it its namespace; other signals travel as a frame on the
// init's socket, which the init passes on while the command runs. Once
// the init has reported the command's end, signals go nowhere, so none
// can reach a command the init runs next.
func (p *spawnedProc) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return signalPid(p.pid, sig) // says it cannot be sent
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.released:
		return nil
	case s == syscall.SIGKILL || s == 0:
		p.killed = p.killed || s == syscall.SIGKILL
		return signalPid(p.pid, s)
	}
	err := sendFrame(p.conn, signalMessage(s))
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return nil // the init has ended
	}
	return err
}

// release records that the init reported the command's end, after
// which Signal sends nothing, and reports whether the init may run
// another command (no SIGKILL was sent to it).
func (p *spawnedProc) release() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.released = true
	return !p.killed
}

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

// peerOpen reports whether the other end of c is still open: an idle
// init's socket reads end-of-file once the init has ended.
func peerOpen(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	raw.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = err == unix.EAGAIN || n > 0
		return true
	})
	return open
}
