//go:build linux

package shell

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/exec/exectest"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

const (
	outsideSecret = "OUTSIDE-SECRET-7f3a"
	envMarker     = "ENVLEAK-91c2"
)

// escape is one attempt to get out: a shell command or a file tool call.
type escape struct{ tool, args string }

func sh(format string, a ...any) escape {
	cmd, _ := json.Marshal(fmt.Sprintf(format, a...))
	return escape{"shell", `{"command":` + string(cmd) + `}`}
}

// corpus is every attempt, with outside the directory beside the
// workspace that holds a secret and a victim file.
func corpus(outside, mark string, rein, tcpPort, udpPort int) []escape {
	o := outside
	return []escape{
		// Paths.
		sh("cat %s/secret", o), sh("cat ../outside/secret"), sh("cp %s/secret copied && cat copied", o),
		sh("echo x > %s/new", o), sh("rm %s/victim", o), sh("mv %s/victim .", o),
		sh("touch /etc/escape-probe-%s", mark), sh("echo x >> /etc/passwd"), sh("mkdir /usr/escape-%s", mark),
		sh("cat /etc/shadow"), sh("ls -A /root /home"), sh("echo x > /tmp/escape-probe-%s && cat /tmp/escape-probe-%s", mark, mark),
		sh("cd / && cat .%s/secret", o), sh("cat /proc/self/root%s/secret", o),
		// Links.
		sh("ln -s %s/secret sl && cat sl", o), sh("ln %s/secret hl && cat hl", o), sh("ln -s / rootlink && cat rootlink%s/secret", o),
		sh("ln -s %s dirlink && echo x > dirlink/new", o), sh("ln %s/victim %s/hl2", o, o), sh("ln -sf /etc/passwd pw && echo x >> pw"),
		// /proc and rein itself.
		sh("cat /proc/$PPID/environ"), sh("cat /proc/1/environ"), sh("for f in /proc/[0-9]*/environ; do cat $f; done"),
		sh("cat /proc/%d/environ", rein), sh("ls /proc/%d/", rein), sh("cat /proc/%d/cmdline", rein),
		sh("cat /proc/%d/root%s/secret", rein, o), sh("cat /proc/%d/cwd/../outside/secret", rein), sh("cat /proc/%d/fd/*", rein),
		sh("ps -eo pid,cmd | grep -v ' ps\\| sh\\|grep\\|bash' | grep -c ."), sh("grep -a %s /proc/*/environ", envMarker),
		sh("cat /proc/%d/mem", rein),
		// Environment.
		sh("env"), sh("echo $REIN_ESCAPE_MARKER"), sh("cat /proc/self/environ"), sh("set"),
		// Network.
		sh("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'", tcpPort), sh("curl -sS -m 2 http://127.0.0.1:%d/", tcpPort),
		sh("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", %d), 2)'", tcpPort),
		sh("python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"hi\", (\"127.0.0.1\", %d))'", udpPort),
		sh("bash -c 'echo hi > /dev/udp/127.0.0.1/%d'", udpPort), sh("curl -sS -m 2 http://example.com/"),
		// Processes that try to outlive the command.
		sh("nohup sleep %s >/dev/null 2>&1 &", mark), sh("setsid sleep %s &", mark), sh("(sleep %s &) &", mark),
		sh("sleep %s & disown", mark), {"shell", `{"command":"sleep ` + mark + `","run_in_background":true}`},
		// Writes through other programs.
		sh("echo x | tee %s/tee", o), sh("python3 -c \"open('%s/py','w').write('x')\"", o),
		sh("python3 -c \"import os; os.remove('%s/victim')\"", o), sh("python3 -c \"import shutil; shutil.rmtree('%s')\"", o),
		sh("perl -e 'open(F, \">%s/perl\") or die; print F 1'", o), sh("dd if=/dev/zero of=%s/dd count=1", o),
		sh("cp /etc/hostname %s/", o), sh("find %s -delete", o), sh("sed -i s/x/y/ %s/victim", o),
		sh("truncate -s0 %s/victim", o), sh("chmod 777 %s/secret", o),
		sh("unshare -r sh -c 'cat %s/secret'", o), sh("nsenter -t 1 -m -p cat %s/secret", o), sh("mount -t tmpfs none /etc"),
		// Signals to rein and to other processes.
		sh("kill -9 %d", rein), sh("kill -STOP %d", rein), sh("kill -9 -1"), sh("pkill -9 -f sleep"),
		sh("python3 -c 'import os; os.kill(%d, 9)'", rein),
		// The file tools.
		{"read", `{"path":"../outside/secret"}`}, {"read", `{"path":"` + o + `/secret"}`}, {"read", `{"path":"sl"}`},
		{"read", `{"path":"planted"}`}, {"grep", `{"pattern":"OUTSIDE"}`}, {"grep", `{"pattern":"OUTSIDE","path":"../outside"}`},
		{"write", `{"path":"../outside/w","content":"x"}`}, {"write", `{"path":"/etc/escape-probe","content":"x"}`},
		{"edit", `{"path":"planted","old_string":"OUTSIDE","new_string":"x"}`}, {"ls", `{"path":"../outside"}`},
		{"glob", `{"pattern":"../outside/*"}`}, {"write", `{"path":"dirlink/new2","content":"x"}`},
	}
}

// TestEscapeCorpus runs every attempt through the shell, under each
// sandbox the machine offers (the first is the shell's default), and
// the file tools, then checks that nothing outside the workspace was
// read, written or deleted, no process outlived the shell, and neither
// rein nor any other process was touched.
func TestEscapeCorpus(t *testing.T) {
	kinds := map[string]func(ws string) (exec.Context, error){
		"default":    func(ws string) (exec.Context, error) { return exec.NewSandbox(&exec.SandboxOptions{Workspace: ws}) },
		"landlock":   func(ws string) (exec.Context, error) { return exec.NewLandlock(&exec.SandboxOptions{Workspace: ws}) },
		"bubblewrap": func(ws string) (exec.Context, error) { return exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws}) },
	}
	for _, kind := range []string{"default", "bubblewrap", "landlock"} {
		t.Run(kind, func(t *testing.T) {
			probe, err := kinds[kind](t.TempDir())
			if err != nil {
				t.Skipf("no %s sandbox here: %v", kind, err)
			}
			probe.Close()
			runCorpus(t, kinds[kind])
		})
	}
}

func runCorpus(t *testing.T, newCtx func(ws string) (exec.Context, error)) {
	t.Setenv("REIN_ESCAPE_MARKER", envMarker)
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret"), []byte(outsideSecret+"\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "victim"), []byte("victim x\n"), 0o644)
	os.Link(filepath.Join(outside, "secret"), filepath.Join(ws, "planted"))
	before := snapshot(t, outside)
	passwd := fileHash("/etc/passwd")
	mark := fmt.Sprintf("311.%d", time.Now().UnixNano()%1_000_000)

	canary := osexec.Command("sleep", "312."+mark[4:])
	if err := canary.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { canary.Process.Kill(); canary.Wait() }()
	tcp, _ := net.Listen("tcp", "127.0.0.1:0")
	defer tcp.Close()
	udp, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer udp.Close()

	ctx, err := newCtx(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	policy := &sandbox.Policy{Root: ws}
	s := New(&Options{Policy: policy, Exec: ctx, KillGrace: 200 * time.Millisecond, Timeout: 10 * time.Second})
	tools := map[string]tool.Tool{}
	for _, tl := range append(s.Tools(), fs.NewTools(policy, nil)...) {
		tools[tl.Spec().Name] = tl
	}
	attempts := corpus(outside, mark, os.Getpid(), tcp.Addr().(*net.TCPAddr).Port, udp.LocalAddr().(*net.UDPAddr).Port)
	if len(attempts) < 60 {
		t.Fatalf("the corpus has %d attempts, want at least 60", len(attempts))
	}
	denied := 0
	for _, a := range attempts {
		res, err := tools[a.tool].Call(context.Background(), &tool.Call{ID: "c", Name: a.tool, Args: json.RawMessage(a.args), Session: "s"})
		if err != nil {
			t.Fatalf("%s %s: %v", a.tool, a.args, err)
		}
		out := text(res)
		if strings.Contains(out, outsideSecret) || strings.Contains(out, envMarker) {
			t.Errorf("%s %s brought outside content back:\n%s", a.tool, a.args, out)
		}
		if res.IsError || strings.HasPrefix(out, "No matches") {
			denied++
		}
	}
	s.Close()
	ctx.Close()
	t.Logf("%d attempts: %d denied, %d ran and were harmless", len(attempts), denied, len(attempts)-denied)

	if after := snapshot(t, outside); after != before {
		t.Errorf("outside the workspace changed:\nbefore %s\nafter  %s", before, after)
	}
	for _, p := range []string{"/etc/escape-probe-" + mark, "/usr/escape-" + mark, "/tmp/escape-probe-" + mark, "/etc/escape-probe"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was created", p)
		}
	}
	if fileHash("/etc/passwd") != passwd {
		t.Error("/etc/passwd changed")
	}
	if n := exectest.CountProcesses(mark); n > 0 {
		t.Errorf("%d processes outlived the shell", n)
	}
	if canary.Process.Signal(syscall.Signal(0)) != nil {
		t.Error("a process outside the sandbox was killed")
	}
	tcp.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
	if c, err := tcp.Accept(); err == nil {
		c.Close()
		t.Error("a command connected to a loopback listener")
	}
	udp.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, _, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Error("a command sent a UDP datagram to a loopback listener")
	}
}

// snapshot describes a directory's files: names, sizes, modes, content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v; ", p, err)
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d %s; ", p, info.Mode(), info.Size(), fileHash(p))
		return nil
	})
	return b.String()
}

func fileHash(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))[:12]
}
