package exec_test

import (
	"os"
	"testing"

	"github.com/reinhq/rein/tool/exec"
	"github.com/reinhq/rein/tool/exec/exectest"
)

func TestMain(m *testing.M) {
	exec.RunHelper()
	os.Exit(m.Run())
}

func TestUnconfined(t *testing.T) {
	exectest.Run(t, &exectest.Options{Network: true, New: func(t *testing.T, ws string) exec.Context {
		return exec.NewUnconfined()
	}})
}

func TestBubblewrap(t *testing.T) {
	if _, err := exec.NewBubblewrap(&exec.SandboxOptions{Workspace: t.TempDir()}); err != nil {
		t.Skipf("bubblewrap is not usable here: %v", err)
	}
	exectest.Run(t, &exectest.Options{New: func(t *testing.T, ws string) exec.Context {
		c, err := exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}})
}

func TestLandlock(t *testing.T) {
	if _, err := exec.NewLandlock(&exec.SandboxOptions{Workspace: t.TempDir()}); err != nil {
		t.Skipf("Landlock is not usable here: %v", err)
	}
	exectest.Run(t, &exectest.Options{New: func(t *testing.T, ws string) exec.Context {
		c, err := exec.NewLandlock(&exec.SandboxOptions{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}})
}
