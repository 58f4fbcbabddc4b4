package exectest

import (
	"bytes"
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nobody is the ordinary user AsUser runs tests as.
const Nobody = 65534

// AsUser re-runs tests of the running test binary as uid, an ordinary
// user, as rein runs for most people: bubblewrap and Landlock then make
// their namespaces through a user namespace, and commands hold no
// capabilities. Each pattern (a -test.run value) runs in a process of its
// own, all at once, from a copy of the binary in a directory uid can
// read, with a home (holding a private folder) and TMPDIR of its own.
//
// AsUser needs root, which CI has: otherwise, or where uid cannot make a
// user namespace, it skips t, saying why. A run that fails fails t. It
// returns the runs' verbose output, in which the caller finds what passed.
func AsUser(t *testing.T, uid int, patterns ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("re-runs tests as an ordinary user, which needs root; run as one, the other tests are that check already")
	}
	dir, err := os.MkdirTemp("", "rein-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	home, tmp, bin := filepath.Join(dir, "home"), filepath.Join(dir, "tmp"), filepath.Join(dir, "test.bin")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{home, tmp, filepath.Join(home, "private")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
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
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		return cmd
	}
	if _, err := osexec.LookPath("unshare"); err == nil {
		if out, err := asUser("unshare", "--user", "/bin/true").CombinedOutput(); err != nil {
			t.Skipf("user namespaces are unavailable to uid %d here, so neither sandbox confines its commands: unshare --user: %v %s", uid, err, out)
		}
	}
	outs := make([]bytes.Buffer, len(patterns))
	runs := make([]*osexec.Cmd, len(patterns))
	for i, pattern := range patterns {
		runs[i] = asUser(bin, "-test.run="+pattern, "-test.v", "-test.count=1")
		runs[i].Stdout, runs[i].Stderr = &outs[i], &outs[i]
		if err := runs[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	for i, run := range runs {
		if err := run.Wait(); err != nil {
			t.Errorf("the tests %s failed as uid %d (%v):\n%s", patterns[i], uid, err, outs[i].Bytes())
		}
		out = append(out, outs[i].Bytes()...)
	}
	return string(out)
}

// Skips are the lines of a verbose test run that say why a test skipped.
func Skips(out string) string {
	var b strings.Builder
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "--- SKIP") && i+1 < len(lines) {
			b.WriteString(l + "\n" + lines[i+1] + "\n")
		}
	}
	return b.String()
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
