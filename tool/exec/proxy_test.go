//go:build linux

package exec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	rexec "github.com/reinhq/rein/tool/exec"
)

// syncBuffer is a bytes.Buffer for a logger written from many
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSandboxAllowedHosts serves HTTP on the loopback address and lets
// sandboxed commands reach it by one name only: through the proxy, by
// a plain request and by a CONNECT tunnel; by another name, or around
// the proxy, the server is not reached and the refusal is logged.
func TestSandboxAllowedHosts(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "hello from loopback")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ws := t.TempDir()
	var logs syncBuffer
	opts := rexec.SandboxOptions{Workspace: ws, Hosts: []string{"localhost"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for name, c := range sandboxes(t, opts) {
		t.Run(name, func(t *testing.T) {
			if got := c.Info().Hosts; len(got) != 1 || got[0] != "localhost" || c.Info().Network {
				t.Errorf("Info = %+v, want only localhost allowed", c.Info())
			}
			run := func(args string) (string, int) {
				var out bytes.Buffer
				p, err := c.Start(context.Background(), &rexec.StartRequest{Argv: []string{"/bin/sh", "-c", "curl -fsS -m 10 " + args},
					Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: &out, Stderr: &out})
				if err != nil {
					t.Fatal(err)
				}
				code, _ := p.Wait()
				return out.String(), code
			}
			for _, args := range []string{"http://localhost:%d/", "-p http://localhost:%d/"} {
				if out, code := run(fmt.Sprintf(args, port)); code != 0 || out != "hello from loopback" {
					t.Errorf("curl %s: exit %d, %q; want the server's answer", args, code, out)
				}
			}
			before := hits.Load()
			for _, args := range []string{"http://127.0.0.1:%d/", "-p http://127.0.0.1:%d/", "--noproxy '*' http://localhost:%d/", "--noproxy '*' http://127.0.0.1:%d/"} {
				if out, code := run(fmt.Sprintf(args, port)); code == 0 || strings.Contains(out, "hello") {
					t.Errorf("curl %s: exit %d, %q; want it refused", args, code, out)
				}
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the server was reached %d times by commands it should not have been", n)
			}
			if !strings.Contains(logs.String(), "host=127.0.0.1") {
				t.Errorf("the refusal was not logged: %q", logs.String())
			}
		})
	}
}

func TestSandboxHostsBadInput(t *testing.T) {
	ws := t.TempDir()
	for _, o := range []*rexec.SandboxOptions{
		{Workspace: ws, Hosts: []string{"https://example.com"}},
		{Workspace: ws, Hosts: []string{"example.com:443"}},
		{Workspace: ws, Hosts: []string{""}},
		{Workspace: ws, Hosts: []string{"example.com"}, Network: true},
	} {
		if c, err := rexec.NewSandbox(o); err == nil {
			c.Close()
			t.Errorf("NewSandbox(%+v) = nil error, want one that says what to give", o)
		} else if !strings.Contains(err.Error(), "give") || errors.Is(err, rexec.ErrNoSandbox) {
			t.Errorf("NewSandbox(%+v) = %v, want it to say what to give, not that there is no sandbox", o, err)
		}
	}
}
