package proc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestAlive(t *testing.T) {
	self := os.Getpid()
	start, ok := Start(self)
	if !ok {
		t.Skip("no /proc on this system")
	}
	if !Alive(self, start) {
		t.Errorf("Alive(self, %d) = false", start)
	}
	if Alive(self, start+1) {
		t.Errorf("Alive(self, another start time) = true; a reused pid must not count as alive")
	}
	if Alive(0, 0) || Alive(-1, 0) {
		t.Errorf("a pid <= 0 counts as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	if Alive(cmd.Process.Pid, 0) {
		t.Errorf("Alive(pid of a process that exited and was reaped) = true")
	}
}

func TestSpace(t *testing.T) {
	s := Space()
	if s == "" {
		t.Skip("no /proc on this system")
	}
	if s != Space() {
		t.Errorf("Space changed between calls")
	}
	if !strings.Contains(s, " pid:[") {
		t.Errorf("Space() = %q, want a boot id and a pid namespace", s)
	}
}
