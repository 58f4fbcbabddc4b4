package exec_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/reinhq/rein/internal/testwait"
	"os"
	osexec "os/exec"
	"testing"
	"time"

	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/exec/exectest"
)

// parentMain runs in a re-executed test binary: it starts a command
// through the context named by $EXECTEST_PARENT, says so, and waits to
// be killed.
func parentMain(kind, ws, marker string) {
	var c exec.Context
	var err error
	script := "sleep " + marker + " & exec sleep " + marker
	switch kind {
	case "unconfined":
		c, script = exec.NewUnconfined(), "exec sleep "+marker
	case "bubblewrap":
		c, err = exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws})
	case "landlock":
		c, err = exec.NewLandlock(&exec.SandboxOptions{Workspace: ws})
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := c.Start(context.Background(), &exec.StartRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}

func init() {
	if kind := os.Getenv("EXECTEST_PARENT"); kind != "" {
		parentMain(kind, os.Getenv("EXECTEST_WS"), os.Getenv("EXECTEST_MARKER"))
	}
}

// TestKilledWithRein kills a process that started commands with SIGKILL,
// so it can clean nothing up, and checks that the kernel ends them.
func TestKilledWithRein(t *testing.T) {
	for i, kind := range []string{"unconfined", "bubblewrap", "landlock"} {
		t.Run(kind, func(t *testing.T) {
			marker := fmt.Sprintf("%d.%d%d", 61+i, os.Getpid(), time.Now().UnixNano()%1000)
			parent := osexec.Command(os.Args[0], "-test.run=^$")
			parent.Env = append(os.Environ(), "EXECTEST_PARENT="+kind, "EXECTEST_WS="+t.TempDir(), "EXECTEST_MARKER="+marker)
			out, _ := parent.StdoutPipe()
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line != "ready\n" {
				parent.Process.Kill()
				parent.Wait()
				t.Skipf("%s not usable: %s", kind, line)
			}
			if n := exectest.CountProcesses(marker); n == 0 {
				t.Fatal("the command is not running")
			}
			parent.Process.Kill()
			parent.Wait()
			if !testwait.For(2*time.Second, func() bool { return exectest.CountProcesses(marker) == 0 }) {
				ps, _ := osexec.Command("sh", "-c", "ps -eo pid,ppid,stat,cmd | grep "+marker).Output()
				t.Fatalf("%d processes outlived their parent by 2s:\n%s", exectest.CountProcesses(marker), ps)
			}
		})
	}
}
