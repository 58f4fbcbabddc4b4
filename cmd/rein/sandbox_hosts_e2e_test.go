//go:build linux

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	osexec "os/exec"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/llmtest"
)

// TestSandboxAllowHostE2E: with --sandbox-allow-host localhost, a shell
// command fetches from a loopback server by that name, and by another
// name it is refused, the refusal said on stderr and recorded in the
// log.
func TestSandboxAllowHostE2E(t *testing.T) {
	if _, err := osexec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "fetched-7c1e")
	}))
	defer web.Close()
	port := web.Listener.Addr().(*net.TCPAddr).Port
	e := newEnv(t)
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", fmt.Sprintf(`{"command":"curl -fsS -m 10 http://localhost:%d/"}`, port)),
		llmtest.CallTool("c2", "shell", fmt.Sprintf(`{"command":"curl -fsS -m 10 http://127.0.0.1:%d/"}`, port)),
		llmtest.Reply("done"),
	)
	srv := llmtest.NewServer(t, m)
	w := wires[0]
	r := e.run(w.env(), w.args(srv, e, "--approve", "auto", "--tools", "shell", "--sandbox-allow-host", "localhost", "--new-session", "s-hosts", "fetch")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "host=127.0.0.1") {
		t.Errorf("stderr does not say 127.0.0.1 was refused: %s", r.stderr)
	}
	x := e.run(nil, "sessions", "export", "--store", e.store, "s-hosts")
	if x.code != 0 {
		t.Fatalf("export: exit %d: %s", x.code, x.stderr)
	}
	if n := strings.Count(x.stdout, "fetched-7c1e"); n != 1 {
		t.Errorf("the server's answer is in the log %d times, want once (localhost allowed, 127.0.0.1 not):\n%s", n, x.stdout)
	}
	if !strings.Contains(x.stdout, `"key":"sandbox.refused","value":"127.0.0.1"`) {
		t.Errorf("the log does not record the refusal:\n%s", x.stdout)
	}
	if !strings.Contains(x.stdout, "403") {
		t.Errorf("the refused command's output does not say why:\n%s", x.stdout)
	}
}
