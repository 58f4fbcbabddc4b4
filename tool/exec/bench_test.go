package exec_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/tool/exec"
)

// BenchmarkStart measures starting /bin/true and waiting for it in each
// context: the cost a sandbox adds to every shell command.
func BenchmarkStart(b *testing.B) {
	ws := b.TempDir()
	kinds := []struct {
		name string
		make func() (exec.Context, error)
	}{
		{"unconfined", func() (exec.Context, error) { return exec.NewUnconfined(), nil }},
		{"bubblewrap", func() (exec.Context, error) { return exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws}) }},
		{"bubblewrap-network", func() (exec.Context, error) {
			return exec.NewBubblewrap(&exec.SandboxOptions{Workspace: ws, Network: true})
		}},
		{"landlock", func() (exec.Context, error) { return exec.NewLandlock(&exec.SandboxOptions{Workspace: ws}) }},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			c, err := k.make()
			if err != nil {
				b.Skipf("%s: %v", k.name, err)
			}
			defer c.Close()
			req := &exec.StartRequest{Argv: []string{"/bin/true"}, Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}}
			for b.Loop() {
				p, err := c.Start(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if code, err := p.Wait(); code != 0 {
					b.Fatal(code, err)
				}
			}
		})
	}
}
