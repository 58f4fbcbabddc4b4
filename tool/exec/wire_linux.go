package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The spawner and its per-command inits speak in frames over Unix
// stream sockets: a 4-byte big-endian length, then the body. File
// descriptors and the sender's credentials ride on the frame's first
// bytes.

// maxFrame bounds a frame's body: a command line and its environment.
const maxFrame = 16 << 20

// sendFrame writes body as one frame with fds attached.
func sendFrame(c *net.UnixConn, body []byte, fds ...int) error {
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.WriteMsgUnix(buf, oob, nil)
	if err != nil || n == len(buf) {
		return err
	}
	_, err = c.Write(buf[n:])
	return err
}

// frame is a received frame: its body, the files that came with it and,
// when the receiving socket passes credentials, the sender's pid as the
// receiver's PID namespace numbers it.
type frame struct {
	body  []byte
	files []*os.File
	pid   int
}

// recvFrame reads one frame. io.EOF means the peer closed the socket
// between frames.
func recvFrame(c *net.UnixConn) (*frame, error) {
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*4)+unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := c.ReadMsgUnix(hdr[:], oob)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, io.EOF
	}
	f := &frame{}
	if err := f.parse(oob[:oobn]); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c, hdr[n:]); err != nil {
		f.close()
		return nil, fmt.Errorf("exec: short frame: %w", err)
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxFrame {
		f.close()
		return nil, fmt.Errorf("exec: frame of %d bytes is over the limit", size)
	}
	f.body = make([]byte, size)
	if _, err := io.ReadFull(c, f.body); err != nil {
		f.close()
		return nil, fmt.Errorf("exec: short frame: %w", err)
	}
	return f, nil
}

func (f *frame) parse(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("exec: control message: %w", err)
	}
	for i := range msgs {
		if fds, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			for _, fd := range fds {
				f.files = append(f.files, os.NewFile(uintptr(fd), "passed"))
			}
		} else if cred, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			f.pid = int(cred.Pid)
		}
	}
	return nil
}

func (f *frame) close() {
	for _, file := range f.files {
		file.Close()
	}
}

// socketPair returns two connected Unix stream sockets: one as a
// connection of this process and one as a file to hand on.
func socketPair() (*net.UnixConn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("exec: socketpair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "spawner")
	defer mine.Close()
	c, err := fileConn(mine)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c, os.NewFile(uintptr(fds[1]), "spawner-peer"), nil
}

// fileConn makes a connection of a Unix socket file (and leaves f to
// its caller to close).
func fileConn(f *os.File) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("exec: socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("exec: the spawner's descriptor is not a Unix socket")
	}
	return uc, nil
}

// passCredentials has the kernel attach the sender's credentials to
// every frame received on f.
func passCredentials(f *os.File) error {
	return syscall.SetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
}
