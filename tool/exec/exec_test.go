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
	runSuite(t, func(ws string) (exec.Context, error) { return exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws}) })
}

func TestLandlock(t *testing.T) {
	runSuite(t, func(ws string) (exec.Context, error) { return exec.NewLandlock(&exec.SandboxOptions{Workspace: ws}) })
}

// runSuite runs the conformance suite on a sandbox, or skips saying why
// the machine has none of that kind.
func runSuite(t *testing.T, make func(ws string) (exec.Context, error)) {
	if c, err := make(t.TempDir()); err != nil {
		t.Skipf("not usable here: %v", err)
	} else {
		c.Close()
	}
	exectest.Run(t, &exectest.Options{New: func(t *testing.T, ws string) exec.Context {
		c, err := make(ws)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}})
}
