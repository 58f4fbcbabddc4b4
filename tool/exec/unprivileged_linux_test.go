package exec_test

import (
	"bytes"
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unprivilegedUID is the ordinary user the sandbox tests are re-run as:
// nobody.
const unprivilegedUID = 65534

// unprivilegedTests are the tests re-run, in two runs at once (they
// mostly wait for processes): the conformance suite (with its
// confinement checks) on both sandboxes, with and without the spawner,
// and the tests of commands apart, of escapees and of inits reused.
var unprivilegedTests = []string{
	"^(TestBubblewrap|TestLandlock|TestSandbox(CommandsApart|EscapeeEndsWithCommand|InitReused|InitUntouchable))$",
	"^TestSandboxPerCommand$",
}

// TestSandboxUnprivileged re-runs the sandbox tests as an ordinary user,
// as rein runs for most people: bubblewrap and Landlock then make their
// namespaces through a user namespace, and the commands hold no
// capabilities. It runs when the tests run as root (as CI does), with a
// copy of this test binary and a home directory nobody owns.
func TestSandboxUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("re-runs the sandbox tests as an ordinary user, which needs root; run as one, the other tests are that check already")
	}
	dir, err := os.MkdirTemp("", "rein-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	home, tmp, bin := filepath.Join(dir, "home"), filepath.Join(dir, "tmp"), filepath.Join(dir, "exec.test")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The home holds a file the sandbox must not list; the tests'
	// workspaces are made under tmp.
	for _, d := range []string{home, tmp, filepath.Join(home, "private")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, unprivilegedUID, unprivilegedUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyExecutable(bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	asUser := func(argv ...string) *osexec.Cmd {
		cmd := osexec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = tmp
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL,
			Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
		return cmd
	}
	if _, err := osexec.LookPath("unshare"); err == nil {
		if out, err := asUser("unshare", "--user", "/bin/true").CombinedOutput(); err != nil {
			t.Skipf("user namespaces are unavailable to uid %d here, so neither sandbox confines its commands: unshare --user: %v %s", unprivilegedUID, err, out)
		}
	}
	outs := make([]bytes.Buffer, len(unprivilegedTests))
	runs := make([]*osexec.Cmd, len(unprivilegedTests))
	for i, pattern := range unprivilegedTests {
		runs[i] = asUser(bin, "-test.run="+pattern, "-test.v", "-test.count=1")
		runs[i].Stdout, runs[i].Stderr = &outs[i], &outs[i]
		if err := runs[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	for i, run := range runs {
		if err := run.Wait(); err != nil {
			t.Errorf("the sandbox tests %s failed as uid %d (%v):\n%s", unprivilegedTests[i], unprivilegedUID, err, outs[i].Bytes())
		}
		out = append(out, outs[i].Bytes()...)
	}
	if t.Failed() {
		return
	}
	confined := regexp.MustCompile(`(?m)^\s*--- PASS: (TestBubblewrap|TestLandlock|TestSandboxPerCommand/\w+)/Confinement\b.*$`).FindAllString(string(out), -1)
	if len(confined) == 0 {
		t.Skipf("no sandbox confines commands as uid %d here (are user namespaces unavailable to it?); what the tests said:\n%s",
			unprivilegedUID, skips(string(out)))
	}
	t.Logf("as uid %d:\n%s", unprivilegedUID, strings.Join(confined, "\n"))
}

// copyExecutable copies the running test binary to path, for a user who
// cannot reach the build's directory.
func copyExecutable(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// skips are the lines of a verbose test run that say why a test skipped.
func skips(out string) string {
	var b strings.Builder
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "--- SKIP") && i+1 < len(lines) {
			b.WriteString(l + "\n" + lines[i+1] + "\n")
		}
	}
	return b.String()
}
