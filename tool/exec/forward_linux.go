package exec

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// forward runs in the spawner, inside the sandbox's network namespace:
// it listens on the loopback ProxyPort and joins every connection to
// rein's proxy at the Unix socket sock, so commands that have no
// network reach the allowed hosts through HTTP_PROXY.
func forward(sock string, loopbackDown bool) error {
	if loopbackDown {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ProxyPort))
	if err != nil {
		return fmt.Errorf("proxy forwarder: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go join(c, sock)
		}
	}()
	return nil
}

func join(c net.Conn, sock string) {
	defer c.Close()
	up, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		io.Copy(up, c)
		up.(*net.UnixConn).CloseWrite()
	}()
	io.Copy(c, up)
}

// loopbackUp brings up the loopback interface of a fresh network
// namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}
